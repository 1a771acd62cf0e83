package fakellm

import (
	"strings"
	"time"
)

// Call is one scripted tool call.
type Call struct {
	// ID is generated ("call_N" for OpenAI, "toolu_N" for Anthropic) when
	// empty; N counts up per Server so ids never repeat within a session.
	ID   string `json:"id,omitempty"`
	Name string `json:"name"`
	// Arguments is the raw JSON text sent as the call's arguments. It may be
	// invalid JSON on purpose; it is streamed byte for byte.
	Arguments string `json:"arguments"`
}

// Usage is scripted token accounting. The whole prompt is
// Input+CacheRead+CacheWrite, as in llm.Usage.
type Usage struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cache_read,omitempty"`
	CacheWrite int64 `json:"cache_write,omitempty"`
	// CacheWrite1h is the part of CacheWrite written to Anthropic's 1-hour
	// tier (usage.cache_creation.ephemeral_1h_input_tokens).
	CacheWrite1h int64 `json:"cache_write_1h,omitempty"`
	// Reasoning is the part of Output spent thinking; OpenAI reports it as
	// completion_tokens_details.reasoning_tokens, Anthropic does not report it.
	Reasoning int64 `json:"reasoning,omitempty"`
}

// ErrorReply is an HTTP error answer (or, as Step.StreamError, an error
// event inside a stream).
type ErrorReply struct {
	// Status is the HTTP status; 0 means 500. Ignored for in-stream errors,
	// which arrive inside a 200 stream.
	Status int `json:"status"`
	// Header holds extra response headers, e.g. Retry-After.
	Header map[string]string `json:"header,omitempty"`
	// Body is sent verbatim when set; when empty, Type, Message and Code are
	// shaped per API.
	Body string `json:"body,omitempty"`
	// Type is the error type, e.g. "rate_limit_error", "overloaded_error",
	// "invalid_request_error".
	Type    string `json:"type,omitempty"`
	Message string `json:"message,omitempty"`
	// Code is OpenAI's "code" field (null when empty); Anthropic has none.
	Code string `json:"code,omitempty"`
	// Param is OpenAI's "param" field (null when empty); Anthropic has none.
	Param string `json:"param,omitempty"`
}

// Step is one scripted reply. It is JSON-serializable (except Respond) so
// scripts can live in files; see LoadScript.
type Step struct {
	Text string `json:"text,omitempty"`
	// Reasoning is sent as delta.reasoning_content (OpenAI) or as a thinking
	// block with a signature (Anthropic), before the text.
	Reasoning string `json:"reasoning,omitempty"`
	Calls     []Call `json:"calls,omitempty"`
	// Compact (OpenAI Responses) answers with a compaction output item
	// first: an encrypted checkpoint of the history, as the server sends
	// when context_management's threshold was crossed.
	Compact bool `json:"compact,omitempty"`
	// Finish is neutral: "stop", "tool_calls", "length", "content_filter"
	// (or "refusal"); "" derives stop or tool_calls. It is mapped per API
	// (end_turn, tool_use, max_tokens, refusal); any other value is sent as is.
	Finish string `json:"finish,omitempty"`
	// Usage nil means estimated: input ≈ request body bytes/4, output ≈
	// output bytes/4 and at least 1 when there is any output.
	Usage *Usage `json:"usage,omitempty"`
	// NoUsage sends no usage at all.
	NoUsage bool `json:"no_usage,omitempty"`
	// Error answers with this HTTP error instead of a reply.
	Error *ErrorReply `json:"error,omitempty"`
	// StreamError streams Text, then an in-stream error event (Anthropic
	// "event: error", OpenAI data: {"error":...}) and ends the body. A
	// non-streaming request gets it as an HTTP error instead.
	StreamError *ErrorReply `json:"stream_error,omitempty"`
	// Drop streams the reply's content, then cuts the TCP connection without
	// finishing the body, so the client sees an unexpected EOF.
	Drop bool `json:"drop,omitempty"`
	// Hangup reads the request and closes the connection without sending
	// a single byte: the bare disconnect of an overloaded proxy.
	Hangup bool `json:"hangup,omitempty"`
	// Latency is waited before the first byte; it overrides WithLatency.
	// In JSON it is nanoseconds or a duration string ("250ms").
	Latency time.Duration `json:"latency,omitempty"`
	// ChunkDelay is waited between streamed events.
	ChunkDelay time.Duration `json:"chunk_delay,omitempty"`
	// Header holds extra response headers for a successful reply.
	Header map[string]string `json:"header,omitempty"`
	// Model, when set, is the model name the reply carries instead of the
	// requested one (a router or alias answering with another model).
	Model string `json:"model,omitempty"`
	// Respond computes the step from the request (demo, dynamic tests). The
	// computed step's own Respond is ignored; its zero Latency and
	// ChunkDelay fall back to this step's.
	Respond func(Request) Step `json:"-"`
}

// Text is a plain text answer.
func Text(s string) Step { return Step{Text: s} }

// Calls is an answer made of tool calls only.
func Calls(calls ...Call) Step { return Step{Calls: calls} }

// TextCalls is a text answer that also calls tools.
func TextCalls(text string, calls ...Call) Step { return Step{Text: text, Calls: calls} }

// ToolCall builds a call with a generated id.
func ToolCall(name, args string) Call { return Call{Name: name, Arguments: args} }

// Empty is a 200 answer with no text and no calls, usage present with Output
// 0, finish stop: the "model said nothing" case.
func Empty() Step { return Step{Finish: "stop"} }

// Truncated is a text answer cut by the output limit (finish "length").
func Truncated(text string) Step { return Step{Text: text, Finish: "length"} }

// Drop streams partial and then dies mid-stream.
func Drop(partial string) Step { return Step{Text: partial, Drop: true} }

// Hangup closes the connection without answering.
func Hangup() Step { return Step{Hangup: true} }

// HTTPError answers with status and an error body shaped per API.
func HTTPError(status int, typ, message string) Step {
	return Step{Error: &ErrorReply{Status: status, Type: typ, Message: message}}
}

// RawError answers with status and body verbatim. Each header is a "K: V"
// string; entries without a colon are ignored.
func RawError(status int, body string, header ...string) Step {
	e := &ErrorReply{Status: status, Body: body}
	for _, h := range header {
		k, v, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(k) == "" {
			continue
		}
		if e.Header == nil {
			e.Header = map[string]string{}
		}
		e.Header[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return Step{Error: e}
}

// WithLatency sets the wait before the first byte.
func (s Step) WithLatency(d time.Duration) Step { s.Latency = d; return s }

// WithChunkDelay sets the wait between streamed events.
func (s Step) WithChunkDelay(d time.Duration) Step { s.ChunkDelay = d; return s }

// WithUsage sets reported usage (no cache tokens).
func (s Step) WithUsage(in, out int64) Step {
	s.Usage = &Usage{Input: in, Output: out}
	return s
}

// WithHeader adds a response header: on the HTTP error when the step has
// one (e.g. Retry-After), else on the stream-error reply, else on the
// successful reply. The maps are copied so steps built from a shared value
// do not alias.
func (s Step) WithHeader(k, v string) Step {
	switch {
	case s.Error != nil:
		e := *s.Error
		e.Header = withKey(e.Header, k, v)
		s.Error = &e
	case s.StreamError != nil:
		e := *s.StreamError
		e.Header = withKey(e.Header, k, v)
		s.StreamError = &e
	default:
		s.Header = withKey(s.Header, k, v)
	}
	return s
}

func withKey(m map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for mk, mv := range m {
		out[mk] = mv
	}
	out[k] = v
	return out
}
