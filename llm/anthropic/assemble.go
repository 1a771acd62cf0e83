package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/internal/accum"
)

// sseEvent is the union of the Messages stream event payloads we read.
type sseEvent struct {
	Type         string      `json:"type"`
	Index        int         `json:"index"`
	Message      *sseMessage `json:"message"`
	ContentBlock *sseBlock   `json:"content_block"`
	Delta        *sseDelta   `json:"delta"`
	Usage        *sseUsage   `json:"usage"`
	Error        *sseError   `json:"error"`
}

type sseMessage struct {
	ID    string    `json:"id"`
	Model string    `json:"model"`
	Usage *sseUsage `json:"usage"`
}

// sseUsage uses pointers to tell a field that was sent from one that was not.
type sseUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	// CacheCreation splits the written tokens by cache tier.
	CacheCreation *struct {
		Ephemeral1h *int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
}

type sseBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
}

type sseDelta struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	PartialJSON string `json:"partial_json"`
	Thinking    string `json:"thinking"`
	Signature   string `json:"signature"`
	StopReason  string `json:"stop_reason"`
}

type sseError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// streamErrorEvent is an SSE `error` event: the API failed after the 200.
type streamErrorEvent struct {
	Body    []byte
	Type    string
	Message string
}

func (e *streamErrorEvent) Error() string {
	if e.Type != "" {
		return fmt.Sprintf("stream error event %s: %s", e.Type, e.Message)
	}
	return "stream error event: " + e.Message
}

// malformedEventError is an event whose data is not the JSON we expect.
type malformedEventError struct {
	Data []byte
	Err  error
}

func (e *malformedEventError) Error() string { return "malformed stream event: " + e.Err.Error() }
func (e *malformedEventError) Unwrap() error { return e.Err }

type blockKind int

const (
	kindOther blockKind = iota
	kindText
	kindToolUse
	kindThinking
	kindRedacted
)

// blockState is one content block as it is being streamed.
type blockState struct {
	kind blockKind
	call *accum.Call // for kindToolUse

	thinking  strings.Builder
	signature string
	redacted  string
}

// assembler turns Messages stream events into llm events and, at
// message_stop, the assembled llm.Response. It does no I/O, so it is tested
// and fuzzed without a server.
type assembler struct {
	// s keeps the answer text and, as its reasoning, what inline <think>
	// tags held: the reasoning when no thinking block came.
	s          accum.Stream
	reqModel   string // the model asked for: the issuer of replay state
	stopReason string
	stopped    bool

	blocks map[int]*blockState
	order  []*blockState // in start order
	// startInput is each call's input as its block started, by call index.
	startInput []json.RawMessage
}

func newAssembler() *assembler {
	return &assembler{blocks: make(map[int]*blockState)}
}

// feed consumes one event. name is the SSE event name, used only when the
// payload lacks a type. The returned slice is valid until the next call.
func (a *assembler) feed(name string, data []byte) ([]llm.Event, error) {
	a.s.Begin()
	var ev sseEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		if name == "error" {
			// An error event in a shape we do not know is still an error.
			return nil, &streamErrorEvent{Body: bytes.Clone(data), Message: string(data)}
		}
		return nil, &malformedEventError{Data: bytes.Clone(data), Err: err}
	}
	typ := ev.Type
	if typ == "" {
		typ = name
	}
	switch typ {
	case "message_start":
		if m := ev.Message; m != nil {
			a.s.ID, a.s.Model = m.ID, m.Model
			a.applyUsage(m.Usage, true)
		}
	case "content_block_start":
		if ev.ContentBlock != nil {
			a.startBlock(ev.Index, ev.ContentBlock)
		}
	case "content_block_delta":
		if ev.Delta != nil {
			a.delta(ev.Index, ev.Delta)
		}
	case "message_delta":
		if ev.Delta != nil && ev.Delta.StopReason != "" {
			a.stopReason = ev.Delta.StopReason
		}
		a.applyUsage(ev.Usage, false)
	case "message_stop":
		a.stopped = true
		a.s.Flush()
	case "error":
		e := &streamErrorEvent{Body: bytes.Clone(data)}
		if ev.Error != nil {
			e.Type, e.Message = ev.Error.Type, ev.Error.Message
		}
		return nil, e
	}
	// content_block_stop, ping and unknown events carry nothing we need.
	return a.s.Events(), nil
}

func (a *assembler) startBlock(index int, cb *sseBlock) {
	b := &blockState{}
	switch cb.Type {
	case "text":
		b.kind = kindText
		a.s.Text(cb.Text)
	case "tool_use":
		b.kind = kindToolUse
		b.call = a.s.NewCall(cb.ID, cb.Name)
		a.startInput = append(a.startInput, bytes.Clone(cb.Input))
	case "thinking":
		b.kind = kindThinking
		b.signature = cb.Signature
		a.addThinking(b, cb.Thinking)
	case "redacted_thinking":
		b.kind = kindRedacted
		b.redacted = cb.Data
	}
	a.blocks[index] = b
	a.order = append(a.order, b)
}

func (a *assembler) delta(index int, d *sseDelta) {
	b := a.blocks[index]
	switch d.Type {
	case "text_delta":
		// Text is kept even for a block we never saw start: losing answer
		// text is worse than tolerating a sloppy proxy.
		a.s.Text(d.Text)
	case "thinking_delta":
		if b == nil {
			b = &blockState{kind: kindThinking}
			a.blocks[index] = b
			a.order = append(a.order, b)
		}
		a.addThinking(b, d.Thinking)
	case "signature_delta":
		if b != nil {
			b.signature += d.Signature
		}
	case "input_json_delta":
		if b != nil && b.kind == kindToolUse {
			a.s.Args(b.call, d.PartialJSON)
		}
	}
}

// addThinking keeps a thinking block's text in the block: a signature
// covers exactly one block's text.
func (a *assembler) addThinking(b *blockState, s string) {
	b.thinking.WriteString(s)
	a.s.ReasoningEvent(s)
}

// applyUsage records token counts. message_start carries the prompt side;
// message_delta carries the cumulative output count, so its value replaces
// the earlier one. A prompt-side count in message_delta replaces the start's
// only when non-zero: some proxies send zeros there.
func (a *assembler) applyUsage(u *sseUsage, start bool) {
	if u == nil {
		return
	}
	a.s.Usage.Reported = true
	set := func(dst *int64, v *int64) {
		if v != nil && (start || *v != 0) {
			*dst = *v
		}
	}
	set(&a.s.Usage.InputTokens, u.InputTokens)
	set(&a.s.Usage.CacheReadTokens, u.CacheReadInputTokens)
	set(&a.s.Usage.CacheWriteTokens, u.CacheCreationInputTokens)
	if u.CacheCreation != nil {
		set(&a.s.Usage.CacheWrite1hTokens, u.CacheCreation.Ephemeral1h)
	}
	if u.OutputTokens != nil {
		a.s.Usage.OutputTokens = *u.OutputTokens
	}
}

// partialText is the answer text yielded so far.
func (a *assembler) partialText() string { return a.s.PartialText() }

// response assembles the final answer.
func (a *assembler) response() *llm.Response {
	for _, c := range a.s.Calls() {
		if c.Args.Len() == 0 {
			c.Args.WriteString(startArguments(a.startInput[c.Index]))
		}
	}
	msg, inline := a.s.Message("{}")
	msg.Reasoning = a.reasoning(inline)
	finish, raw := mapStopReason(a.stopReason)
	return a.s.Response(msg, finish, raw)
}

// reasoning keeps every thinking and redacted_thinking block, in order and
// exactly as streamed: a signature covers exactly one block's text, so
// blocks are never merged or edited. Text, Signature and Redacted mirror the
// first of each kind for readers that only show thinking.
func (a *assembler) reasoning(inline string) *llm.Reasoning {
	r := &llm.Reasoning{}
	var haveThinking bool
	for _, b := range a.order {
		switch b.kind {
		case kindThinking:
			text := b.thinking.String()
			r.Blocks = append(r.Blocks, llm.ThinkingBlock{Type: "thinking", Thinking: text, Signature: b.signature})
			if !haveThinking {
				haveThinking = true
				r.Text, r.Signature = text, b.signature
			}
		case kindRedacted:
			r.Blocks = append(r.Blocks, llm.ThinkingBlock{Type: "redacted_thinking", Data: b.redacted})
			if r.Redacted == "" {
				r.Redacted = b.redacted
			}
		}
	}
	if !haveThinking && inline != "" {
		// Unsigned: shown and kept, never replayed to Anthropic.
		r.Text = inline
	}
	if r.Empty() {
		return nil
	}
	r.API, r.Model = apiName, a.reqModel
	return r
}

// startArguments is a call's input as its block started when it is a
// non-empty object, else "{}": the arguments of a call no delta carried.
func startArguments(startInput json.RawMessage) string {
	in := bytes.TrimSpace(startInput)
	if len(in) > 0 && in[0] == '{' && json.Valid(in) {
		var compact bytes.Buffer
		if json.Compact(&compact, in) == nil && compact.String() != "{}" {
			return compact.String()
		}
	}
	return "{}"
}

// mapStopReason normalizes stop_reason; raw is always what the API sent.
func mapStopReason(s string) (llm.FinishReason, string) {
	switch s {
	case "end_turn", "stop_sequence":
		return llm.FinishStop, s
	case "tool_use":
		return llm.FinishToolCalls, s
	case "max_tokens":
		return llm.FinishLength, s
	case "refusal":
		return llm.FinishRefusal, s
	}
	// pause_turn (a server tool paused the turn) and anything new.
	return llm.FinishUnknown, s
}
