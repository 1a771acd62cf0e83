package compact

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Overflow is what a provider's context-overflow message says about sizes.
// Either field is 0 when the message does not say.
type Overflow struct {
	// Limit is the context window the provider enforces, in tokens.
	Limit int
	// Actual is the prompt size the provider counted, in tokens.
	Actual int
}

// overflowPatterns read the sizes out of the overflow messages of the
// common servers. They are compiled once, on first use, and never written
// (read-only tables, like tokenWeights). Each names its groups "limit" and
// "actual".
var overflowPatterns = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		// OpenAI, vLLM: "This model's maximum context length is 8192 tokens.
		// However, your messages resulted in 9000 tokens" / "you requested 9000
		// tokens (8000 in the messages, 1000 in the completion)".
		regexp.MustCompile(`maximum context length is (?P<limit>\d+)`),
		regexp.MustCompile(`\((?P<actual>\d+) in the messages`),
		regexp.MustCompile(`(?:resulted in|you requested) (?P<actual>\d+) tokens`),
		// Anthropic: "prompt is too long: 210000 tokens > 200000 maximum".
		regexp.MustCompile(`(?P<actual>\d+) tokens > (?P<limit>\d+) maximum`),
		// llama.cpp: "request (9000 tokens) exceeds the available context size
		// (8192 tokens)".
		regexp.MustCompile(`request \((?P<actual>\d+) tokens\) exceeds the available context size \((?P<limit>\d+) tokens\)`),
		// Gemini: "The input token count (1200000) exceeds the maximum number of
		// tokens allowed (1048576)".
		regexp.MustCompile(`input token count \((?P<actual>\d+)\) exceeds the maximum number of tokens allowed \((?P<limit>\d+)\)`),
		// Generic: "max_model_len 4096" / "context window of 4096 tokens".
		regexp.MustCompile(`max_model_len (?:is |of |= ?)?(?P<limit>\d+)`),
		regexp.MustCompile(`context (?:window|size|length) of (?P<limit>\d+)`),
	}
})

// minPlausibleWindow: a number below it in an overflow message is not a
// context window (it is more likely a count of messages or a line number).
const minPlausibleWindow = 512

// ParseOverflow reads the enforced window and the counted prompt size out
// of a provider's context-overflow message; the first pattern that names a
// field wins. A provider's own numbers beat the catalogue's and the
// estimator's: they are what it enforces.
func ParseOverflow(msg string) Overflow {
	var o Overflow
	msg = strings.ToLower(strings.ReplaceAll(msg, ",", ""))
	for _, re := range overflowPatterns() {
		m := re.FindStringSubmatch(msg)
		if m == nil {
			continue
		}
		for i, name := range re.SubexpNames() {
			n, err := strconv.Atoi(m[i])
			if err != nil || n <= 0 {
				continue
			}
			switch {
			case name == "limit" && o.Limit == 0 && n >= minPlausibleWindow:
				o.Limit = n
			case name == "actual" && o.Actual == 0:
				o.Actual = n
			}
		}
	}
	return o
}
