package guard

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxIntentReplyLen is the longest reply, in characters, TrailingIntent
// considers: a long answer that ends with "let me know…" style chatter has
// done its work.
const MaxIntentReplyLen = 600

// TrailingIntent reports whether a short final reply ends by announcing a
// next action it did not take ("Let me now run the tests.", "I'll start by
// reading main.go:", "Next, I…", "I'm going to…"). Only the last sentence
// counts (after its last colon, when text follows the colon). Replies that
// ask or wait for the user ("Shall I…?", "Let me know…", "if you want", any
// question mark), completed summaries ("I have…", "Done.") and replies
// longer than MaxIntentReplyLen are never flagged. Case, curly apostrophes,
// trailing ":", "…" and markdown emphasis do not matter.
//
// It errs towards false: a missed announcement costs the user one "go on",
// a false one costs a pointless extra call.
func TrailingIntent(text string) bool {
	s := strings.TrimSpace(text)
	if s == "" || utf8.RuneCountInString(s) > MaxIntentReplyLen {
		return false
	}
	s = normalizeIntentText(s)
	if hasQuestion(s) || containsAny(s, waitsForUser[:]) || strings.ContainsAny(s, "？¿") {
		return false
	}
	// English first: it is what most replies are written in, and its
	// check is the cheaper one.
	return englishIntent(s) || foreignIntent(s)
}

// englishIntent applies the English rules to the normalized reply s.
func englishIntent(s string) bool {
	last := lastSentence(strings.TrimRight(s, trailingNoise))
	if i := strings.LastIndex(last, ": "); i >= 0 {
		label := last[:i]
		last = last[i+2:]
		if isLabel(label) {
			// "Next: I run the tests", "Then: I check …": the label says
			// what "next," would say in running text.
			last = "next, " + last
		}
	}
	if containsAny(last, conditional[:]) {
		return false
	}
	words := intentWords(last)
	for k := range words {
		if (k == 0 || words[k-1] == clauseBreak || isConjunction(words[k-1])) && announces(words[k:]) {
			return true
		}
	}
	return false
}

// trailingNoise is what a reply may end with after its last word.
const trailingNoise = " \t\r\n:.!*_`~>\"')]…"

// Phrases that mean the model is waiting for, or deferring to, the user.
var (
	waitsForUser = [...]string{
		"let me know", "your confirmation", "your approval", "your go-ahead", "your permission",
		"your input", "your feedback", "want me to", "would you like", "shall i", "should i",
		"do you want", "if you'd like", "if you would like", "if you like", "if you want",
		"if you prefer", "feel free", "up to you",
	}
	conditional = [...]string{
		"if you", "when you", "once you", "unless you", "after you", "if needed",
		"if necessary", "if desired", "if that's", "for you to",
	}
)

func normalizeIntentText(s string) string {
	s = strings.ToLower(s)
	return strings.NewReplacer("’", "'", "‘", "'", "…", "...", "—", ",", "–", ",").Replace(s)
}

func containsAny(s string, phrases []string) bool {
	for _, p := range phrases {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// hasQuestion finds a question mark that ends a sentence (not one inside
// code or a URL such as a?.b or ?x=1).
func hasQuestion(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '?' {
			continue
		}
		if i+1 == len(s) || strings.IndexByte(" \t\r\n*_`\"')]", s[i+1]) >= 0 {
			return true
		}
	}
	return false
}

// lastSentence returns the text after the last sentence break: a line
// break, or ".", "!" or "?" followed by white space (not after "e.g." and
// the like, which would split one sentence in two).
func lastSentence(s string) string {
	for i := len(s) - 2; i >= 0; i-- {
		c := s[i]
		if c == '\n' {
			return s[i+1:]
		}
		if (c == '.' || c == '!' || c == '?') && unicode.IsSpace(rune(s[i+1])) && !abbreviationAt(s, i) {
			return s[i+1:]
		}
	}
	return s
}

func abbreviationAt(s string, dot int) bool {
	for _, a := range [...]string{"e.g", "i.e", "etc", "vs"} {
		if strings.HasSuffix(s[:dot], a) {
			return true
		}
	}
	return false
}

// clauseBreak stands for a comma, semicolon or parenthesis among the words:
// an announcement may start a clause ("The file is saved, now I'll…").
const clauseBreak = ","

// intentWords splits a sentence into words, keeping apostrophes inside words
// ("i'll") and clause breaks as clauseBreak, and dropping markdown, digits
// and other punctuation.
func intentWords(s string) []string {
	var out []string
	start := -1
	flush := func(end int) {
		if start >= 0 {
			if w := strings.Trim(s[start:end], "'"); w != "" {
				out = append(out, w)
			}
			start = -1
		}
	}
	for i, r := range s {
		switch {
		case unicode.IsLetter(r) || r == '\'':
			if start < 0 {
				start = i
			}
		case r == ',' || r == ';' || r == '(' || r == ')':
			flush(i)
			if len(out) > 0 && out[len(out)-1] != clauseBreak {
				out = append(out, clauseBreak)
			}
		default:
			flush(i)
		}
	}
	flush(len(s))
	return out
}

// labelWords end a label that introduces the next step ("Next:", "Then:",
// "Next step:", "Step 2:").
var labelWords = [...]string{"next", "then", "now", "step", "steps", "first", "finally", "afterwards", "plan", "todo"}

// isLabel reports whether text before a colon is a next-step label: a few
// words ending in a label word.
func isLabel(s string) bool {
	w := intentWords(s)
	return len(w) > 0 && len(w) <= 3 && slices.Contains(labelWords[:], w[len(w)-1])
}

func isConjunction(w string) bool { return w == "and" || w == "so" || w == "but" || w == "then" }

// announces reports whether words start with an announcement of the
// speaker's own next action.
func announces(words []string) bool {
	w := words
	bare := false // "Next, I run…" announces even without "will"
	for len(w) > 0 && (w[0] == clauseBreak || slices.Contains(fillers[:], w[0])) {
		bare = bare || w[0] == "next" || w[0] == "then" || w[0] == "first"
		w = w[1:]
	}
	at := func(i int, options ...string) bool { return i < len(w) && slices.Contains(options, w[i]) }
	switch {
	case at(0, "let") && at(1, "me", "us"):
		return actionFollows(w[2:])
	case at(0, "let's"):
		return actionFollows(w[1:])
	case at(0, "i'll", "we'll"):
		return actionFollows(w[1:]) || goingTo(w[1:])
	case at(0, "i", "we") && at(1, "will", "shall"):
		return actionFollows(w[2:])
	case at(0, "i'm", "we're"):
		return goingTo(w[1:])
	case at(0, "i") && at(1, "am"), at(0, "we") && at(1, "are"):
		return goingTo(w[2:])
	case at(0, "time") && at(1, "to"):
		return actionFollows(w[2:])
	case bare && at(0, "i", "we"):
		return actionFollows(w[1:]) && bareVerb(w[1:])
	}
	return false
}

// goingTo matches "[now] going to …" and "[now] about to …".
func goingTo(w []string) bool {
	w = skipAdverbs(w)
	if len(w) >= 2 && (w[0] == "going" || w[0] == "about") && w[1] == "to" {
		return actionFollows(w[2:])
	}
	return len(w) >= 1 && w[0] == "gonna" && actionFollows(w[1:])
}

// actionFollows reports whether the words after an announcement name an
// action of the speaker's: nothing ("Let me now…" cut short) or a verb that
// is not waiting, stopping or deferring.
func actionFollows(w []string) bool {
	w = skipAdverbs(w)
	return len(w) == 0 || !slices.Contains(notActions[:], w[0])
}

// bareVerb guards the "Next, I <verb>" form, where a present-tense verb is
// the only sign of intent: "Next, I recommend…" or "Then I found…" are not.
func bareVerb(w []string) bool {
	w = skipAdverbs(w)
	if len(w) == 0 {
		return true
	}
	return !slices.Contains(notBareVerbs[:], w[0]) && !strings.HasSuffix(w[0], "ed")
}

func skipAdverbs(w []string) []string {
	for len(w) > 0 {
		switch {
		case slices.Contains(adverbs[:], w[0]):
			w = w[1:]
		case len(w) >= 3 && w[0] == "go" && w[1] == "ahead" && w[2] == "and":
			w = w[3:]
		default:
			return w
		}
	}
	return w
}

var (
	fillers = [...]string{
		"ok", "okay", "alright", "all", "right", "great", "good", "perfect", "sure", "well", "cool",
		"excellent", "nice", "now", "next", "then", "so", "first", "finally", "lastly", "and",
		"also", "after", "that",
	}
	adverbs    = [...]string{"now", "next", "then", "first", "also", "just", "quickly", "briefly", "immediately", "actually", "finally"}
	notActions = [...]string{
		"know", "be", "wait", "leave", "stop", "need", "await", "keep", "hold", "pause", "let",
		"hope", "assume", "stay", "stand", "remain", "defer", "end", "not", "never", "help",
	}
	notBareVerbs = [...]string{
		"am", "was", "were", "have", "had", "did", "see", "saw", "understand", "know", "think",
		"believe", "recommend", "suggest", "hope", "can", "could", "would", "should", "might",
		"may", "must", "need", "want", "found", "got", "realize", "realise", "also",
		"ran", "wrote", "made", "took", "built", "kept", "sent", "left", "came", "went",
	}
)
