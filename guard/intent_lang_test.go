package guard

import "testing"

// Issue 11, item 9: label forms, and announcements in the other languages
// users write in. A question or a report of finished work is never nudged.
func TestTrailingIntentLabelsAndLanguages(t *testing.T) {
	tests := []struct {
		lang, text string
		want       bool
	}{
		// Label forms.
		{"en", "Step one complete. Next: I run the tests", true},
		{"en", "Then: I check the config.", true},
		{"en", "Next step: I run the migration.", true},
		{"en", "Step 2: I update the README.", true},
		{"en", "Next: I ran the tests and they pass.", false},
		{"en", "Next step: I recommend upgrading Go.", false},
		{"en", "Next: should I run the tests?", false},
		{"en", "Result: I found the bug in the parser.", false},

		// Japanese.
		{"ja", "設定を確認しました。次に、テストを実行します。", true},
		{"ja", "これからファイルを修正します", true},
		{"ja", "ログを確認してみます。", true},
		{"ja", "テストを実行しました。", false},
		{"ja", "テストを実行しましょうか？", false},
		{"ja", "次に、テストを実行してもよろしいですか。", false},
		{"ja", "変更内容をご確認ください。", false},

		// Chinese.
		{"zh", "配置已修复。接下来我将运行测试。", true},
		{"zh", "让我检查一下日志", true},
		{"zh", "好的，我来修改这个文件。", true},
		{"zh", "我已经运行了测试，全部通过。", false},
		{"zh", "需要我运行测试吗？", false},
		{"zh", "测试都通过了。", false},
		{"zh", "如果您同意，我将部署它。", false},

		// Spanish.
		{"es", "El archivo está corregido. Ahora voy a ejecutar las pruebas.", true},
		{"es", "Déjame revisar el registro.", true},
		{"es", "A continuación, voy a actualizar el README.", true},
		{"es", "He ejecutado las pruebas y todas pasan.", false},
		{"es", "¿Quieres que ejecute las pruebas?", false},
		{"es", "Avísame si necesitas algo más.", false},
		{"es", "Voy a esperar tu confirmación.", false},

		// German.
		{"de", "Die Konfiguration ist repariert. Als Nächstes werde ich die Tests ausführen.", true},
		{"de", "Lass mich die Logdatei prüfen.", true},
		{"de", "Jetzt werde ich den Server neu starten.", true},
		{"de", "Ich habe die Tests ausgeführt.", false},
		{"de", "Soll ich die Tests ausführen?", false},
		{"de", "Sag mir Bescheid, wenn du Änderungen willst.", false},
		{"de", "Ich werde die öffentliche API nicht ändern.", false},

		// French.
		{"fr", "Le bug est corrigé. Je vais maintenant lancer les tests.", true},
		{"fr", "Laissez-moi vérifier le fichier de configuration.", true},
		{"fr", "Ensuite, je vais mettre à jour le README.", true},
		{"fr", "J'ai lancé les tests et tout passe.", false},
		{"fr", "Voulez-vous que je lance les tests ?", false},
		{"fr", "Dites-moi si vous voulez d'autres changements.", false},
		{"fr", "Je vais attendre votre confirmation.", false},
	}
	for _, tc := range tests {
		t.Run(tc.lang+"/"+tc.text, func(t *testing.T) {
			if got := TrailingIntent(tc.text); got != tc.want {
				t.Errorf("TrailingIntent(%q) = %v, want %v", tc.text, got, tc.want)
			}
		})
	}
}
