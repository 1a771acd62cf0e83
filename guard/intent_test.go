package guard

import (
	"strings"
	"testing"
)

func TestTrailingIntent(t *testing.T) {
	long := strings.Repeat("I changed the parser so that it accepts trailing commas. ", 12) + "Let me now run the tests."
	tests := []struct {
		text string
		want bool
	}{
		// Announced and not done.
		{"Let me now run the tests.", true},
		{"Let me check the config file…", true},
		{"I will now update the README.", true},
		{"I'll now apply the patch:", true},
		{"I'll start by reading main.go.", true},
		{"Next, I'll add the migration.", true},
		{"Now I'll run go vet.", true},
		{"I'm going to refactor the parser next.", true},
		{"I found the bug in parse.go. Let me fix it.", true},
		{"The build failed because of a missing import. I will add it now.", true},
		{"**Next, I will update the tests.**", true},
		{"Okay, let me look at the logs...", true},
		{"Great, the schema is in place; now I'll write the loader.", true},
		{"I’ll run the benchmarks.", true},
		{"Let's run the full test suite.", true},
		{"Alright. Next, I run the linter.", true},
		{"I am going to inspect the database schema:", true},
		{"Now let me search for other callers", true},
		{"I'll go ahead and delete the stale branch.", true},
		{"Step 1 is done.\n\nLet me now continue with step 2…", true},
		{"Time to run the migration.", true},
		{"The config is fixed and now I'll restart the server.", true},
		{"Here's the plan: I'll rename the package first.", true},
		{"Let me now…", true},
		{"LET ME CHECK THE LOGS.", true},
		{"- Let me open `main.go` to see the handler", true},
		{"I checked e.g. the config. Now I'm about to patch it.", true},

		// Questions, waiting for the user, completed work.
		{"Shall I run the tests?", false},
		{"Do you want me to apply the patch?", false},
		{"Let me know if you want any changes.", false},
		{"I have updated the README and all tests pass.", false},
		{"Done.", false},
		{"I'll run the tests if you want.", false},
		{"Would you like me to continue?", false},
		{"I've fixed the bug. Let me know if anything else comes up.", false},
		{"Here is the summary of the changes.", false},
		{"I'll be here if you need anything else.", false},
		{"I will wait for your confirmation before deleting the files.", false},
		{"Let me know what you think:", false},
		{"The tests pass now.", false},
		{"Should I also update the changelog?", false},
		{"I'll leave the rest to you.", false},
		{"Let me run the tests. Which environment should I use?", false},
		{"I'm going to need your API key to continue.", false},
		{"Let me now run the tests. Then I'll report what I found. Everything is committed.", false},
		{"Once you confirm, I'll deploy it.", false},
		{"Let me explain: the parser reads tokens and builds a tree.", false},
		{"Let me summarize: all 12 tests pass and the binary is 8 MB.", false},
		{"Next, I recommend upgrading Go.", false},
		{"Then I found the root cause: a nil map.", false},
		{"I'll keep that in mind.", false},
		{"First, I ran the linter and it passed.", false},
		{"I will not change the public API.", false},
		{"Let me run the tests?", false},
		{"I can also add tests if that's useful.", false},
		{"All done!", false},
		{"", false},
		{"   \n ", false},
		{long, false},
	}
	for _, tc := range tests {
		t.Run(tc.text, func(t *testing.T) {
			if got := TrailingIntent(tc.text); got != tc.want {
				t.Errorf("TrailingIntent(%q) = %v, want %v", tc.text, got, tc.want)
			}
		})
	}
}

func TestTrailingIntentLengthBoundary(t *testing.T) {
	tail := " Let me now run the tests."
	pad := func(n int) string { return strings.Repeat("x", n-len(tail)-1) + "." + tail }
	if !TrailingIntent(pad(MaxIntentReplyLen)) {
		t.Errorf("a reply of exactly %d characters is not considered", MaxIntentReplyLen)
	}
	if TrailingIntent(pad(MaxIntentReplyLen + 1)) {
		t.Errorf("a reply over %d characters is considered", MaxIntentReplyLen)
	}
}

func FuzzTrailingIntent(f *testing.F) {
	for _, s := range []string{"Let me now run the tests.", "Shall I?", "Next, I", "e.g. ", "…", "I'll, ", "x.\u00a0Let me"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := TrailingIntent(s) // must not panic on any input
		if got && (hasQuestion(normalizeIntentText(s)) || len([]rune(strings.TrimSpace(s))) > MaxIntentReplyLen) {
			t.Fatalf("flagged a question or an over-long reply: %q", s)
		}
	})
}
