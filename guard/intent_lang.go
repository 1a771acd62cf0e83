package guard

import (
	"strings"
	"unicode"
)

// Said-but-stopped in the other languages users write in. Each language is
// a short list of phrases that open an announcement of the speaker's own
// next step, phrases that wait for or defer to the user (never nudged), and
// phrases that report finished work (never nudged). Like the English rules
// it errs towards false.
type intentLang struct {
	// announce opens an announcement; it must start the last sentence, or
	// follow one of lead there.
	announce []string
	// lead are sentence openers that may precede an announcement ("ahora",
	// "als nächstes").
	lead []string
	// waits anywhere in the reply means it waits for the user.
	waits []string
	// done in the last sentence means it reports, not announces.
	done []string
}

var intentLangs = [...]intentLang{
	{ // Spanish
		announce: []string{"voy a ", "vamos a ", "déjame ", "dejame ", "permíteme ", "permiteme ", "procedo a ", "a continuación voy a ", "ahora voy a "},
		lead:     []string{"ahora", "bien", "vale", "perfecto", "de acuerdo", "a continuación", "luego", "después", "primero", "entonces", "ok"},
		waits:    []string{"avísame", "avisame", "quieres que", "si quieres", "si lo deseas", "si prefieres", "dime si", "házmelo saber", "tu confirmación", "su confirmación", "esperaré", "voy a esperar", "te parece"},
		done:     []string{"he ", "hemos ", "ya está", "listo", "terminé"},
	},
	{ // German
		announce: []string{"lass mich ", "lassen sie mich ", "ich werde ", "wir werden ", "jetzt werde ich ", "nun werde ich ", "als nächstes werde ich ", "ich schaue mir ", "ich führe jetzt ", "ich prüfe jetzt ", "ich starte jetzt ", "ich mache mich an ", "werde ich ", "führe ich ", "prüfe ich ", "schaue ich "},
		lead:     []string{"jetzt", "nun", "als nächstes", "dann", "anschließend", "zunächst", "gut", "okay", "ok", "alles klar"},
		waits:    []string{"sag mir", "sagen sie mir", "lass mich wissen", "lassen sie mich wissen", "soll ich", "möchtest du", "möchten sie", "falls du", "falls sie", "wenn du möchtest", "wenn sie möchten", "bestätigung", "bescheid", "ich werde warten", "nicht ändern"},
		done:     []string{"ich habe ", "habe ich ", "wurde ", "wurden ", "ist fertig", "erledigt"},
	},
	{ // French
		announce: []string{"je vais ", "laissez-moi ", "laisse-moi ", "permettez-moi ", "je m'apprête à ", "je passe à ", "je lance ", "je commence par ", "nous allons "},
		lead:     []string{"maintenant", "ensuite", "puis", "d'abord", "bien", "parfait", "d'accord", "ok", "très bien", "à présent"},
		waits:    []string{"dites-moi", "dis-moi", "n'hésitez pas", "voulez-vous", "veux-tu", "souhaitez-vous", "si vous voulez", "si vous le souhaitez", "si tu veux", "votre confirmation", "ta confirmation", "faites-moi savoir", "je vais attendre", "j'attends"},
		done:     []string{"j'ai ", "nous avons ", "a été ", "ont été ", "est terminé"},
	},
}

// Japanese and Chinese have no spaces between words; they are matched on
// the last sentence as a whole.
var (
	jaMarkers = []string{"次に", "これから", "今から", "まず", "それでは", "では、", "続いて", "引き続き", "早速", "さっそく"}
	jaStrong  = []string{"してみます", "していきます", "しましょう", "てみます", "ていきます"}
	jaWaits   = []string{"ください", "いかがでしょうか", "よろしいですか", "ますか", "でしょうか", "ご希望", "お知らせ", "お待ち"}
	zhOpen    = []string{"让我", "我来", "我将", "我会", "我要", "接下来", "下面我", "现在我", "我现在", "我先", "首先我", "然后我", "下一步"}
	zhWaits   = []string{"请告诉我", "请确认", "您是否", "你是否", "需要我", "要不要", "如果您", "如果你", "是否需要", "吗", "等待您", "等您", "等你"}
	zhDone    = []string{"已经", "已完成", "完成了", "都通过"}
)

// foreignIntent applies the rules of the other languages to the lower-cased
// reply s; it is false for English text.
func foreignIntent(s string) bool {
	last := strings.TrimSpace(lastSentenceAny(strings.TrimRight(s, trailingNoise+"。！!…")))
	if last == "" {
		return false
	}
	if hasHan(last) || hasKana(last) {
		return cjkIntent(s, last)
	}
	for _, l := range intentLangs {
		if containsAny(s, l.waits) || containsAny(last, l.done) || containsAny(last, conditional[:]) {
			continue
		}
		rest := last
		if i := strings.LastIndex(rest, ": "); i >= 0 {
			rest = rest[i+2:]
		}
		if announcesIn(rest, l) {
			return true
		}
	}
	return false
}

// announcesIn reports whether sentence opens, after any leads and commas,
// with one of l's announcements.
func announcesIn(sentence string, l intentLang) bool {
	s := strings.TrimLeft(sentence, " ,-*_>")
	for changed := true; changed; {
		changed = false
		for _, lead := range l.lead {
			if rest, ok := strings.CutPrefix(s, lead); ok && (rest == "" || rest[0] == ' ' || rest[0] == ',') {
				s, changed = strings.TrimLeft(rest, " ,"), true
			}
		}
	}
	for _, a := range l.announce {
		if strings.HasPrefix(s, a) {
			return true
		}
	}
	return false
}

func cjkIntent(s, last string) bool {
	if hasKana(last) {
		if containsAny(s, jaWaits) || strings.HasSuffix(last, "ました") || strings.HasSuffix(last, "ません") || strings.HasSuffix(last, "でした") {
			return false
		}
		if containsAny(last, jaStrong) {
			return true
		}
		return containsAny(last, jaMarkers) && (strings.HasSuffix(last, "ます") || strings.HasSuffix(last, "ましょう"))
	}
	if containsAny(s, zhWaits) || containsAny(last, zhDone) || strings.HasSuffix(last, "了") {
		return false
	}
	for _, o := range zhOpen {
		if strings.HasPrefix(last, o) || strings.Contains(last, "，"+o) || strings.Contains(last, ","+o) {
			return true
		}
	}
	return false
}

// lastSentenceAny is lastSentence that also breaks after the full-width
// 。！？ and after a sentence-ending "." "!" followed by a space.
func lastSentenceAny(s string) string {
	cut := 0
	for i, r := range s {
		switch r {
		case '。', '！', '？', '\n':
			cut = i + len(string(r))
		case '.', '!':
			if i+1 < len(s) && s[i+1] == ' ' && !abbreviationAt(s, i) {
				cut = i + 1
			}
		}
	}
	return s[cut:]
}

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

func hasKana(s string) bool {
	for _, r := range s {
		if unicode.In(r, unicode.Hiragana, unicode.Katakana) {
			return true
		}
	}
	return false
}
