package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/catalogue"
	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/tool"
)

// SummaryModel is the auxiliary model WithContext configures for
// summaries; script its replies with Srv.ScriptModel(SummaryModel, ...).
const SummaryModel = "summary-model"

// ContextOptions shape a small-window stack for context-management tests.
type ContextOptions struct {
	// Window is the primary model's context window in tokens (catalogue
	// override); 0 keeps the catalogue's.
	Window int
	// Threshold is the compression trigger ratio (default 0.5).
	Threshold float64
	// ModelThreshold, when set, is the primary model's own trigger ratio
	// (a catalogue override), which wins over Threshold.
	ModelThreshold float64
	// Attempts is the compression budget per turn (default 3).
	Attempts int
	// MinTail overrides the compressor's MinTailMessages.
	MinTail int
	// OnFailure sets the compressor's failure mode.
	OnFailure compact.FailureMode
	// SummaryTimeout bounds the summary call (the compressor's default
	// when zero).
	SummaryTimeout time.Duration
	// Rotate continues compressed sessions in a child session.
	Rotate bool
}

// WithContext returns a Configure function that gives the primary model a
// small window and a compressor whose summarizer is the primary route's
// provider (as the CLI wires it) asking SummaryModel, and keeps the system
// prompt short so request sizes are predictable.
func WithContext(o ContextOptions) func(*agent.Config) {
	return func(c *agent.Config) {
		model := c.Routes[0].Model
		if o.Window > 0 {
			c.Catalogue = catalogue.New(map[string]catalogue.Model{
				model: {Window: o.Window, MaxOutput: 1024, CompressionRatio: o.ModelThreshold},
			})
		}
		c.Threshold = compact.Threshold{Ratio: o.Threshold}
		c.CompressAttempts = o.Attempts
		c.Compressor = &compact.Compressor{
			Summarizer:      c.Routes[0].Provider,
			Model:           SummaryModel,
			MinTailMessages: o.MinTail,
			OnFailure:       o.OnFailure,
			Timeout:         o.SummaryTimeout,
		}
		c.RotateOnCompression = o.Rotate
		c.SystemPrompt = "You are a test agent. Use the fetch tool when asked."
	}
}

// FetchTool is a read-only tool "fetch" whose result for {"n": N} is
// "RESULT-N" followed by size bytes of filler, so a test can tell which
// result landed where.
func FetchTool(size int) tool.Tool {
	return MustFunc(tool.Info{
		Name:        "fetch",
		Description: "Fetch record n.",
		Parameters:  ObjectSchema(`{"n":{"type":"integer"}}`, "n"),
		ReadOnly:    true,
	},
		func(_ context.Context, args json.RawMessage) (tool.Result, error) {
			var a struct{ N int }
			if err := json.Unmarshal(args, &a); err != nil {
				return tool.Result{}, err
			}
			return tool.Result{Content: FetchResult(a.N, size)}, nil
		})
}

// FetchResult is what FetchTool returns for n.
func FetchResult(n, size int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "RESULT-%d\n", n)
	line := fmt.Sprintf("record %d: the quick brown fox jumps over the lazy dog\n", n)
	for b.Len() < size {
		b.WriteString(line)
	}
	return b.String()
}

// StepNumber returns N from a user text "step N" ("" and false otherwise).
func StepNumber(text string) (int, bool) {
	s, ok := strings.CutPrefix(strings.TrimSpace(text), "step ")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(strings.Fields(s + " ")[0])
	return n, err == nil
}

// Overflowed reports whether a request's body is larger than window
// tokens by fakellm's own estimate (body bytes / 4), the check a scripted
// model uses to answer like a provider whose context overflowed.
func Overflowed(r fakellm.Request, window int) bool {
	return len(r.Body)/4 > window
}

// MessagesJSON returns the raw bytes of a request body's "messages" array,
// exactly as sent.
func MessagesJSON(body []byte) (json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, err
	}
	// Messages (Chat Completions, Anthropic), input (Responses), contents
	// (Gemini).
	for _, k := range []string{"messages", "input", "contents"} {
		if m, ok := top[k]; ok {
			return m, nil
		}
	}
	return nil, fmt.Errorf("body has no messages")
}

// FieldJSON returns the raw bytes of a top-level body field ("" when absent).
func FieldJSON(body []byte, field string) json.RawMessage {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return nil
	}
	return top[field]
}

// CacheMark is how the Anthropic adapter marks a cache breakpoint on a block.
const CacheMark = `,"cache_control":{"type":"ephemeral"}`

// IsPrefix reports whether the messages array a, without its closing
// bracket, is a byte prefix of the messages array b: every message a sent
// is sent again, byte for byte, at the start of b.
func IsPrefix(a, b []byte) bool {
	a = bytes.TrimSpace(a)
	if len(a) < 2 || a[len(a)-1] != ']' {
		return false
	}
	return bytes.HasPrefix(b, a[:len(a)-1])
}
