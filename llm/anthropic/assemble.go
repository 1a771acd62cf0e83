package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/internal/thinktags"
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
	call int // index into assembler.calls for kindToolUse

	thinking  strings.Builder
	signature string
	redacted  string
}

type callState struct {
	id, name   string
	args       strings.Builder
	startInput json.RawMessage
}

// assembler turns Messages stream events into llm events and, at
// message_stop, the assembled llm.Response. It does no I/O, so it is tested
// and fuzzed without a server.
type assembler struct {
	id, model  string
	reqModel   string // the model asked for: the issuer of replay state
	usage      llm.Usage
	stopReason string
	stopped    bool

	text strings.Builder
	// think moves inline <think>…</think> out of text blocks; what it
	// finds is the reasoning when no thinking block came.
	think  thinktags.Splitter
	inline strings.Builder
	blocks map[int]*blockState
	order  []*blockState // in start order
	calls  []*callState

	out []llm.Event // reused between feeds
}

func newAssembler() *assembler {
	return &assembler{blocks: make(map[int]*blockState)}
}

// feed consumes one event. name is the SSE event name, used only when the
// payload lacks a type. The returned slice is valid until the next call.
func (a *assembler) feed(name string, data []byte) ([]llm.Event, error) {
	a.out = a.out[:0]
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
			a.id, a.model = m.ID, m.Model
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
		a.emitText(a.think.Flush())
	case "error":
		e := &streamErrorEvent{Body: bytes.Clone(data)}
		if ev.Error != nil {
			e.Type, e.Message = ev.Error.Type, ev.Error.Message
		}
		return nil, e
	}
	// content_block_stop, ping and unknown events carry nothing we need.
	return a.out, nil
}

func (a *assembler) startBlock(index int, cb *sseBlock) {
	b := &blockState{}
	switch cb.Type {
	case "text":
		b.kind = kindText
		a.addText(cb.Text)
	case "tool_use":
		b.kind = kindToolUse
		b.call = len(a.calls)
		a.calls = append(a.calls, &callState{id: cb.ID, name: cb.Name, startInput: bytes.Clone(cb.Input)})
		a.out = append(a.out, llm.Event{Type: llm.EventToolCallStart, Index: b.call, ID: cb.ID, Name: cb.Name})
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
		a.addText(d.Text)
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
		if b == nil || b.kind != kindToolUse || d.PartialJSON == "" {
			return
		}
		a.calls[b.call].args.WriteString(d.PartialJSON)
		a.out = append(a.out, llm.Event{Type: llm.EventToolCallDelta, Index: b.call, Text: d.PartialJSON})
	}
}

func (a *assembler) addText(s string) {
	if s == "" {
		return
	}
	a.emitText(a.think.Feed(s))
}

func (a *assembler) emitText(text, reasoning string) {
	if reasoning != "" {
		a.inline.WriteString(reasoning)
		a.out = append(a.out, llm.Event{Type: llm.EventReasoningDelta, Text: reasoning})
	}
	if text != "" {
		a.text.WriteString(text)
		a.out = append(a.out, llm.Event{Type: llm.EventTextDelta, Text: text})
	}
}

func (a *assembler) addThinking(b *blockState, s string) {
	if s == "" {
		return
	}
	b.thinking.WriteString(s)
	a.out = append(a.out, llm.Event{Type: llm.EventReasoningDelta, Text: s})
}

// applyUsage records token counts. message_start carries the prompt side;
// message_delta carries the cumulative output count, so its value replaces
// the earlier one. A prompt-side count in message_delta replaces the start's
// only when non-zero: some proxies send zeros there.
func (a *assembler) applyUsage(u *sseUsage, start bool) {
	if u == nil {
		return
	}
	a.usage.Reported = true
	set := func(dst *int64, v *int64) {
		if v != nil && (start || *v != 0) {
			*dst = *v
		}
	}
	set(&a.usage.InputTokens, u.InputTokens)
	set(&a.usage.CacheReadTokens, u.CacheReadInputTokens)
	set(&a.usage.CacheWriteTokens, u.CacheCreationInputTokens)
	if u.CacheCreation != nil {
		set(&a.usage.CacheWrite1hTokens, u.CacheCreation.Ephemeral1h)
	}
	if u.OutputTokens != nil {
		a.usage.OutputTokens = *u.OutputTokens
	}
}

// partialText is the answer text yielded so far.
func (a *assembler) partialText() string { return a.text.String() }

// response assembles the final answer.
func (a *assembler) response() *llm.Response {
	msg := llm.Message{Role: llm.RoleAssistant}
	t := a.text.String()
	if answer, reasoning, ok := thinktags.SplitOrphanClose(t); ok {
		t = answer
		a.inline.WriteString(reasoning)
	}
	if t != "" {
		msg.Content = []llm.Part{llm.TextPart(t)}
	}
	for _, c := range a.calls {
		msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: c.id, Name: c.name, Arguments: c.arguments()})
	}
	msg.Reasoning = a.reasoning()
	finish, raw := mapStopReason(a.stopReason)
	return &llm.Response{
		Message:         msg,
		FinishReason:    finish,
		RawFinishReason: raw,
		Usage:           a.usage,
		Model:           a.model,
		ID:              a.id,
	}
}

// reasoning keeps every thinking and redacted_thinking block, in order and
// exactly as streamed: a signature covers exactly one block's text, so
// blocks are never merged or edited. Text, Signature and Redacted mirror the
// first of each kind for readers that only show thinking.
func (a *assembler) reasoning() *llm.Reasoning {
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
	if !haveThinking && a.inline.Len() > 0 {
		// Unsigned: shown and kept, never replayed to Anthropic.
		r.Text = a.inline.String()
	}
	if r.Empty() {
		return nil
	}
	r.API, r.Model = apiName, a.reqModel
	return r
}

// arguments is the streamed JSON text; without deltas, the input the block
// started with (when it is a non-empty object), else "{}".
func (c *callState) arguments() string {
	if c.args.Len() > 0 {
		return c.args.String()
	}
	in := bytes.TrimSpace(c.startInput)
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
