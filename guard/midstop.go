package guard

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// minCutWords is how many words the last line of a reply needs before its
// missing full stop is taken as a cut: "Done" or "All green" are complete.
const minCutWords = 4

// CutMidSentence reports whether a reply that the server marked as finished
// ("stop") looks cut off mid-sentence, a known quirk of some local servers
// right after tool results: its last line is prose of at least minCutWords
// words ending in a lower-case letter, with no terminal punctuation, closing
// bracket, quote, emoji or code after it, in a reply that punctuates its
// earlier sentences (a reply written without any punctuation, "finished
// after 10 rounds", is a style, not a cut). Lists, headings, tables and
// code blocks are never flagged: they end without a full stop by nature.
//
// It errs towards false: a missed cut costs the user one "go on", a false
// one costs a pointless continuation call.
func CutMidSentence(text string) bool {
	s := strings.TrimRight(text, " \t")
	if s == "" || strings.HasSuffix(s, "\n") {
		return false
	}
	if strings.Count(s, "```")%2 == 1 {
		return false // inside an open code block
	}
	line := s
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		line = s[i+1:]
	}
	line = strings.TrimSpace(line)
	if line == "" || strings.ContainsAny(line[:1], "-*#|>+`0123456789") {
		return false
	}
	last, _ := utf8.DecodeLastRuneInString(line)
	if !unicode.IsLower(last) {
		return false
	}
	if len(strings.Fields(line)) < minCutWords {
		return false
	}
	return punctuated(s[:len(s)-len(line)] + strings.TrimRight(line, "abcdefghijklmnopqrstuvwxyz"))
}

// punctuated reports whether s ends a sentence somewhere: ".", "!", "?" or
// ":" followed by white space or the end of a line.
func punctuated(s string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(".!?:", s[i]) < 0 {
			continue
		}
		if i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n' {
			return true
		}
	}
	return false
}
