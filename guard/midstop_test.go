package guard

import "testing"

func TestCutMidSentence(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		// Cut: prose that stops mid-word or mid-sentence.
		{"I listed the directory. The main configuration file is confi", true},
		{"I listed the directory and the main configuration file is confi", false},
		{"finished after 10 rounds", false},
		{"The tests pass. The remaining failure is in the parser, which does not handle the empty cas", true},
		{"Summary:\nThe build works but the linker warns about the unused symbol", true},
		// Complete: terminal punctuation, short lines, closing marks.
		{"I listed the directory and found three files.", false},
		{"All tests pass!", false},
		{"Done", false},
		{"All green now", false},
		{"Shall I go on with the next file?", false},
		{"The result is in `out.txt`", false},
		{"See the file (config.yaml)", false},
		{`He said "use the flag"`, false},
		{"The total is 42", false},
		{"Updated the version to V2", false},
		{"全部测试都通过了", false},
		// Structures that end without a full stop by nature.
		{"Files:\n- main.go\n- the parser of the config file", false},
		{"## Next steps for the parser module", false},
		{"| a | b |\n| the first column value here", false},
		{"```go\nfunc main() { fmt.Println(x) }\n// and this is inside the code block", false},
		{"1. read the file and check the config", false},
		{"The answer is complete and ends with a newline\n", false},
		{"", false},
	}
	for _, tc := range tests {
		t.Run(tc.text, func(t *testing.T) {
			if got := CutMidSentence(tc.text); got != tc.want {
				t.Errorf("CutMidSentence(%q) = %v, want %v", tc.text, got, tc.want)
			}
		})
	}
}
