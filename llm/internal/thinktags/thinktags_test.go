package thinktags

import "testing"

func TestThinkSplitter(t *testing.T) {
	tests := []struct {
		name, in             string
		wantText, wantReason string
	}{
		{"think block then answer", "<think>plan the sum</think>\n\nThe answer is 4.", "The answer is 4.", "plan the sum"},
		{"thinking tag", "<thinking>hmm</thinking>Yes.", "Yes.", "hmm"},
		{"reasoning tag after white space", "\n  <reasoning>a\nb</reasoning>\nok", "ok", "a\nb"},
		{"upper case", "<THINK>x</THINK>y", "y", "x"},
		{"only thinking", "<think>still thinking about it", "", "still thinking about it"},
		{"two blocks", "<think>a</think><think>b</think>c", "c", "ab"},
		{"no tag", "Plain answer.", "Plain answer.", ""},
		{"tag after visible text stays text", "Use the <think> tag like this: <think>x</think>", "Use the <think> tag like this: <think>x</think>", ""},
		{"a lone angle bracket", "<b>bold</b>", "<b>bold</b>", ""},
		{"an unfinished tag at the end", "<thi", "<thi", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Every split point: tags cut across chunks must not leak.
			for size := 1; size <= len(tc.in); size++ {
				var s Splitter
				var text, reason string
				for i := 0; i < len(tc.in); i += size {
					tx, r := s.Feed(tc.in[i:min(i+size, len(tc.in))])
					text, reason = text+tx, reason+r
				}
				tx, r := s.Flush()
				text, reason = text+tx, reason+r
				if text != tc.wantText || reason != tc.wantReason {
					t.Fatalf("chunks of %d: text %q reasoning %q; want %q, %q", size, text, reason, tc.wantText, tc.wantReason)
				}
			}
		})
	}
}

func TestSplitOrphanClose(t *testing.T) {
	tests := []struct {
		in, answer, reasoning string
		ok                    bool
	}{
		{"The user asks for 2+2.\n</think>\n\nIt is 4.", "It is 4.", "The user asks for 2+2.", true},
		{"plain answer", "plain answer", "", false},
		{"Use <think> and </think> like this.", "Use <think> and </think> like this.", "", false},
	}
	for _, tc := range tests {
		a, r, ok := SplitOrphanClose(tc.in)
		if a != tc.answer || r != tc.reasoning || ok != tc.ok {
			t.Errorf("SplitOrphanClose(%q) = %q, %q, %v; want %q, %q, %v", tc.in, a, r, ok, tc.answer, tc.reasoning, tc.ok)
		}
	}
}
