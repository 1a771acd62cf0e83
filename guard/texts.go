package guard

import (
	"fmt"
	"strings"
)

// Texts the guards produce for the model. They start with "[talaria:" so
// people and the compressor can tell them from the user's words.
const (
	// IdenticalCallNotice is the line appended to a tool result when the
	// same call returned the same result several times in a row. Its verbs
	// are the streak count, its ordinal suffix and the tool's name; use
	// FormatIdenticalCallNotice.
	IdenticalCallNotice = "[talaria: this is the %d%s identical call of %s with the same arguments and the same result. Repeating it will not change the outcome; try something different.]"
	// IdenticalCallNoticePrefix is the fixed start of every identical-call
	// notice, for recognising one.
	IdenticalCallNoticePrefix = "[talaria: this is the "

	// ContinueNudge is the user-role message sent after a reply that ended
	// by announcing a next step it did not take (see TrailingIntent).
	ContinueNudge = "[talaria: you said what you would do next but ended your turn without doing it. Continue now with that step.]"
	// MaxContinueNudges bounds ContinueNudge per turn, so a model that keeps
	// announcing without acting cannot hold the turn open.
	MaxContinueNudges = 2

	// EmptyRetryNudge is the user-role message sent with a retry after the
	// model answered a tool round with nothing at all.
	EmptyRetryNudge = "[talaria: your last reply was empty. Continue from the tool results above: answer the user or call the next tool.]"
)

// FormatIdenticalCallNotice returns IdenticalCallNotice for the count-th
// identical call of toolName ("this is the 3rd identical call of read …").
func FormatIdenticalCallNotice(count int, toolName string) string {
	return fmt.Sprintf(IdenticalCallNotice, count, ordinalSuffix(count), toolName)
}

// IsNudge reports whether text is one of the guards' user-role nudges.
func IsNudge(text string) bool {
	text = strings.TrimSpace(text)
	return text == ContinueNudge || text == EmptyRetryNudge
}

// HasIdenticalCallNotice reports whether a tool result ends with an
// identical-call notice.
func HasIdenticalCallNotice(result string) bool {
	i := strings.LastIndex(result, IdenticalCallNoticePrefix)
	return i >= 0 && strings.HasSuffix(strings.TrimSpace(result[i:]), "]")
}

// ordinalSuffix returns "st", "nd", "rd" or "th" for n.
func ordinalSuffix(n int) string {
	if n < 0 {
		n = -n
	}
	if n%100 >= 11 && n%100 <= 13 {
		return "th"
	}
	switch n % 10 {
	case 1:
		return "st"
	case 2:
		return "nd"
	case 3:
		return "rd"
	}
	return "th"
}
