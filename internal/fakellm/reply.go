package fakellm

import (
	"unicode/utf8"

	"github.com/talaria-agent/talaria/internal/textcut"
)

// Sizes of streamed pieces: small enough that every non-trivial reply
// arrives in several deltas, so clients really have to assemble.
const (
	textChunkBytes = 16
	argsChunkBytes = 8
)

// reply is a successful step resolved for one request: ids assigned,
// finish and usage decided. Wire formats render it.
type reply struct {
	id           string // chatcmpl-N / msg_N
	requestID    string
	model        string
	created      int64
	text         string
	reasoning    string
	calls        []Call
	finish       string // neutral
	usage        *Usage // nil: report none
	includeUsage bool   // OpenAI stream_options.include_usage
	epoch        int    // the server's reasoning key
	compact      bool   // Responses: emit a compaction item first
}

// neutralFinish is the step's finish, derived when empty.
func neutralFinish(st Step) string {
	switch {
	case st.Finish != "":
		return st.Finish
	case len(st.Calls) > 0:
		return "tool_calls"
	default:
		return "stop"
	}
}

// estimateUsage follows the documented rule of thumb: about four bytes a
// token, and at least one output token when there is any output.
func estimateUsage(req Request, st Step) *Usage {
	out := len(st.Text) + len(st.Reasoning)
	for _, c := range st.Calls {
		out += len(c.Name) + len(c.Arguments)
	}
	u := &Usage{Input: int64(len(req.Body) / 4), Output: int64(out / 4)}
	if out > 0 && u.Output == 0 {
		u.Output = 1
	}
	if st.Reasoning != "" {
		u.Reasoning = max(1, int64(len(st.Reasoning)/4))
	}
	return u
}

// resolveUsage picks the usage to report, nil for none.
func resolveUsage(req Request, st Step) *Usage {
	switch {
	case st.NoUsage:
		return nil
	case st.Usage != nil:
		u := *st.Usage
		return &u
	default:
		return estimateUsage(req, st)
	}
}

// split cuts s into pieces of about n bytes, never inside a UTF-8 sequence,
// so every piece stays valid text on the wire.
func split(s string, n int) []string {
	var out []string
	for len(s) > n {
		i := len(textcut.Prefix(s, n))
		if i == 0 {
			// A sequence longer than n: take it whole.
			_, size := utf8.DecodeRuneInString(s)
			i = size
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}
