package compact

import "github.com/talaria-agent/talaria/llm"

// Fixed costs, in tokens, of the structure around content. They follow the
// OpenAI chat format (about 3–4 tokens per message) rounded up; Anthropic's
// block structure costs about the same.
const (
	messageOverhead  = 4
	toolCallOverhead = 8
	toolSpecOverhead = 8
	requestOverhead  = 3
	// ImageTokens is the flat estimate for one image part: Anthropic's cost
	// of a ~1.15 megapixel image, the largest any provider bills before
	// downscaling (OpenAI's high-detail 1024² tile set is ~765).
	ImageTokens = 1600
)

// tokenWeights gives each byte's cost in quarter tokens. The heuristic is
// "4 bytes of English per token", corrected where tokenizers do worse:
// digits and ASCII punctuation (code, JSON) cost half a token, and a
// non-ASCII character costs by its UTF-8 lead byte — 3/4 token for 2-byte
// characters (accented Latin, Cyrillic, Greek), 5/4 for 3-byte ones (CJK,
// most other scripts), 2 tokens for 4-byte ones (emoji) — while continuation
// bytes cost nothing. It errs high, which is the safe side for a window
// check; the Accountant replaces it with provider counts once there are some.
var tokenWeights = buildTokenWeights() // read-only after init

func buildTokenWeights() (w [256]uint8) {
	for b := 0; b < 256; b++ {
		switch {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b == ' ', b == '\n', b == '\t', b == '\r':
			w[b] = 1
		case b >= '0' && b <= '9':
			w[b] = 2
		case b > ' ' && b < 0x7f:
			w[b] = 2
		case b < 0x80: // other control bytes are rare and split badly
			w[b] = 4
		case b < 0xC0: // UTF-8 continuation byte
			w[b] = 0
		case b < 0xE0:
			w[b] = 3
		case b < 0xF0:
			w[b] = 5
		case b < 0xF8:
			w[b] = 8
		default: // never valid UTF-8
			w[b] = 4
		}
	}
	return w
}

// EstimateText returns an estimate of the tokens in s (see tokenWeights for
// the heuristic). It never allocates, runs at several hundred megabytes a second,
// and never decreases when text is appended.
func EstimateText(s string) int { return estimate(s) }

func estimate[T ~string | ~[]byte](s T) int {
	w := &tokenWeights
	n := 0
	i := 0
	for ; i+4 <= len(s); i += 4 {
		n += int(w[s[i]]) + int(w[s[i+1]]) + int(w[s[i+2]]) + int(w[s[i+3]])
	}
	for ; i < len(s); i++ {
		n += int(w[s[i]])
	}
	return (n + 3) / 4
}

// EstimateMessage estimates one message: its text, images at a flat
// ImageTokens each, tool-call names, ids and arguments, the tool-result
// reference, replayed reasoning text, and a per-message overhead.
func EstimateMessage(m llm.Message) int {
	n := messageOverhead
	for i := range m.Content {
		p := &m.Content[i]
		switch p.Type {
		case llm.PartImage:
			n += ImageTokens
		default:
			n += EstimateText(p.Text)
		}
	}
	for i := range m.ToolCalls {
		c := &m.ToolCalls[i]
		n += toolCallOverhead + EstimateText(c.ID) + EstimateText(c.Name) + EstimateText(c.Arguments)
	}
	if m.ToolCallID != "" {
		n += EstimateText(m.ToolCallID) + EstimateText(m.ToolName)
	}
	if m.Reasoning != nil {
		n += EstimateText(m.Reasoning.Text)
	}
	return n
}

// EstimateMessages sums EstimateMessage over ms.
func EstimateMessages(ms []llm.Message) int {
	n := 0
	for i := range ms {
		n += EstimateMessage(ms[i])
	}
	return n
}

// EstimateTools estimates the tool definitions of a request: names,
// descriptions and JSON schemas, plus a per-tool overhead.
func EstimateTools(ts []llm.ToolSpec) int {
	n := 0
	for i := range ts {
		t := &ts[i]
		n += toolSpecOverhead + EstimateText(t.Name) + EstimateText(t.Description) + estimate(t.Parameters)
	}
	return n
}

// EstimateSystem estimates a system prompt (0 when empty).
func EstimateSystem(system string) int {
	if system == "" {
		return 0
	}
	return messageOverhead + EstimateText(system)
}

// EstimateRequest estimates the prompt tokens of r: system prompt, tool
// definitions and messages.
func EstimateRequest(r *llm.Request) int {
	if r == nil {
		return 0
	}
	return requestOverhead + EstimateSystem(r.System) + EstimateTools(r.Tools) + EstimateMessages(r.Messages)
}
