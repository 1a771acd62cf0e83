// Package llmtest is a scripted [llm.Provider] that runs in process: no
// HTTP, no API key, no network. It is for embedders' tests and for Examples
// that run real turns through the real engine.
//
// A script is a list of [Step] values, one per model call, consumed in
// order. A step answers with text, reasoning and tool calls (streamed as the
// engine sees them from a real adapter: deltas, then one final response),
// or fails with an error of a chosen failover class:
//
//	p := llmtest.New(
//		llmtest.Calls(llmtest.ToolCall("add", `{"a":2,"b":3}`)), // the model calls a tool
//		llmtest.Text("2 + 3 = 5"),                               // then answers
//	)
//	route := turn.Route{Provider: p, Model: "scripted"}
//
// After the turn, [Provider.Requests] returns every request the engine sent,
// so a test can check what the model was shown (the tool result, the earlier
// turns of a resumed session, the offered tools).
//
// Failures: a [Fail] step fails the call with an [*llm.APIError] that
// [failover.Classify] puts in the given class (a 429 for rate_limit, a 529 for overloaded, a
// context-length 400 for context_overflow …), so retries, key rotation,
// fallback and compression run exactly as they do for a real provider.
// The provider speaks no wire format, so its errors name none (llm.APIError
// API and BaseURL stay empty) unless the step's error sets them: a test of
// an Anthropic-only error shape sets API "anthropic" on its APIError.
//
// A call beyond the end of the script fails with a non-retryable error
// naming the call, so a turn that makes more calls than the test expected
// ends instead of looping. [Step.Respond] computes a step from the request
// for dynamic scripts. A Provider is safe for concurrent use.
//
// The Examples of the agent, tool and gateway packages run real turns with
// it: a turn with a tool, a resumed session, the gateway in process.
//
// The package does not exercise any wire format; tests of request bytes,
// SDK decoding and HTTP failures use the repository's HTTP fake instead.
package llmtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/talaria-agent/talaria/llm"
)

// DefaultName is the provider name of [New].
const DefaultName = "llmtest"

// deltaBytes is the largest streamed piece: small enough that every
// non-trivial answer arrives in several deltas, as from a real API.
const deltaBytes = 16

// Call is one scripted tool call. An empty ID is filled with "call_N", N
// counting up per Provider, so ids never repeat within a session.
type Call = llm.ToolCall

// Step is one scripted model call.
type Step struct {
	// Text is the answer, streamed in pieces of at most 16 bytes.
	Text string
	// Reasoning is the model's thinking, streamed before the text.
	Reasoning string
	// Calls are tool calls, streamed after the text. Arguments are sent as
	// written, valid JSON or not.
	Calls []Call
	// Finish is the finish reason; empty derives tool_calls when there are
	// calls, else stop. llm.FinishLength makes a truncated answer.
	Finish llm.FinishReason
	// Usage is the reported token accounting; nil estimates it at about
	// four bytes a token of the request and of the answer.
	Usage *llm.Usage
	// Model is the model the answer names; empty echoes the request's.
	Model string
	// Err fails the call with this error instead of answering. After Text
	// (streamed first) it is a mid-stream failure. Use [Fail] for an error
	// of a given failover class.
	Err error
	// Respond computes the step from the request (the request must not be
	// modified). The computed step's own Respond is ignored. Respond may
	// block until ctx ends; it then returns a step with ctx's error.
	Respond func(ctx context.Context, req *llm.Request) Step
}

// Text is a plain text answer.
func Text(s string) Step { return Step{Text: s} }

// Calls is an answer made of tool calls only.
func Calls(calls ...Call) Step { return Step{Calls: calls} }

// TextCalls is a text answer that also calls tools.
func TextCalls(text string, calls ...Call) Step { return Step{Text: text, Calls: calls} }

// ToolCall builds a call of the named tool with raw JSON arguments; its id
// is generated.
func ToolCall(name, args string) Call { return Call{Name: name, Arguments: args} }

// Truncated is a text answer cut by the output limit (finish length).
func Truncated(text string) Step { return Step{Text: text, Finish: llm.FinishLength} }

// WithUsage sets the reported usage: input and output tokens.
func (s Step) WithUsage(input, output int64) Step {
	s.Usage = &llm.Usage{InputTokens: input, OutputTokens: output, Reported: true}
	return s
}

// Provider is the scripted provider. The zero value is not usable; build
// one with [New] or [NewNamed].
type Provider struct {
	name string

	mu       sync.Mutex
	steps    []Step
	next     int
	calls    int // tool call ids handed out
	requests []llm.Request
}

// New returns a provider named [DefaultName] that answers with steps, in
// order.
func New(steps ...Step) *Provider { return NewNamed(DefaultName, steps...) }

// NewNamed returns a provider with the given name (the name appears in
// errors, events and key cooldowns, so two routes need two names).
func NewNamed(name string, steps ...Step) *Provider {
	return &Provider{name: name, steps: slices.Clone(steps)}
}

// Name implements llm.Provider.
func (p *Provider) Name() string { return p.name }

// Script appends steps to the script.
func (p *Provider) Script(steps ...Step) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.steps = append(p.steps, steps...)
}

// Remaining is the number of steps not yet used.
func (p *Provider) Remaining() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.steps) - p.next
}

// Requests returns copies of the requests received, in order.
func (p *Provider) Requests() []llm.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.requests)
}

// Stream implements llm.Provider: it records req and plays the next step.
func (p *Provider) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		st, n, ok := p.take(req)
		if !ok {
			yield(llm.Event{}, &llm.APIError{
				Provider: p.name, Model: req.Model, StatusCode: 400,
				Message: fmt.Sprintf("llmtest: the script has no step for call %d (%d scripted)", n+1, n),
			})
			return
		}
		if st.Respond != nil {
			st = st.Respond(ctx, req)
			st.Respond = nil
		}
		p.play(ctx, req, st, n, yield)
	}
}

// take records req and returns the next step and its index.
func (p *Provider) take(req *llm.Request) (Step, int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests = append(p.requests, copyRequest(req))
	n := p.next
	if n >= len(p.steps) {
		return Step{}, len(p.steps), false
	}
	p.next++
	st := p.steps[n]
	// Ids are assigned when the step is taken, so they follow call order.
	if len(st.Calls) > 0 {
		st.Calls = slices.Clone(st.Calls)
		for i := range st.Calls {
			p.calls++
			if st.Calls[i].ID == "" {
				st.Calls[i].ID = "call_" + strconv.Itoa(p.calls)
			}
		}
	}
	return st, n, true
}

// play streams one step.
func (p *Provider) play(ctx context.Context, req *llm.Request, st Step, n int, yield func(llm.Event, error) bool) {
	send := func(ev llm.Event) bool {
		if err := ctx.Err(); err != nil {
			yield(llm.Event{}, p.canceled(req, err))
			return false
		}
		return yield(ev, nil)
	}
	for _, s := range split(st.Reasoning) {
		if !send(llm.Event{Type: llm.EventReasoningDelta, Text: s}) {
			return
		}
	}
	for _, s := range split(st.Text) {
		if !send(llm.Event{Type: llm.EventTextDelta, Text: s}) {
			return
		}
	}
	if st.Err != nil {
		if err := ctx.Err(); err != nil {
			yield(llm.Event{}, p.canceled(req, err))
			return
		}
		yield(llm.Event{}, p.failure(req, st))
		return
	}
	for i, c := range st.Calls {
		if !send(llm.Event{Type: llm.EventToolCallStart, Index: i, ID: c.ID, Name: c.Name}) {
			return
		}
		for _, s := range split(c.Arguments) {
			if !send(llm.Event{Type: llm.EventToolCallDelta, Index: i, Text: s}) {
				return
			}
		}
	}
	send(llm.Event{Type: llm.EventDone, Response: p.response(req, st, n)})
}

// failure is the step's error, with provider, model and the streamed text
// filled in where it is an *llm.APIError (a copy: a step may be reused).
func (p *Provider) failure(req *llm.Request, st Step) error {
	ae, ok := st.Err.(*llm.APIError)
	if !ok {
		return st.Err
	}
	c := *ae
	if c.Provider == "" {
		c.Provider = p.name
	}
	if c.Model == "" {
		c.Model = req.Model
	}
	if st.Text != "" || st.Reasoning != "" {
		c.MidStream, c.PartialText = true, st.Text
	}
	return &c
}

// canceled is the contract's error for a call whose ctx ended.
func (p *Provider) canceled(req *llm.Request, err error) error {
	kind := llm.TransportCanceled
	if errors.Is(err, context.DeadlineExceeded) {
		kind = llm.TransportTimeout
	}
	return &llm.APIError{Provider: p.name, Model: req.Model, Transport: kind, Err: err}
}

// response assembles the final answer of a step.
func (p *Provider) response(req *llm.Request, st Step, n int) *llm.Response {
	msg := llm.Message{Role: llm.RoleAssistant, ToolCalls: st.Calls}
	if st.Text != "" {
		msg.Content = []llm.Part{llm.TextPart(st.Text)}
	}
	if st.Reasoning != "" {
		msg.Reasoning = &llm.Reasoning{Text: st.Reasoning}
	}
	finish := st.Finish
	if finish == "" {
		finish = llm.FinishStop
		if len(st.Calls) > 0 {
			finish = llm.FinishToolCalls
		}
	}
	model := st.Model
	if model == "" {
		model = req.Model
	}
	usage := estimate(req, st)
	if st.Usage != nil {
		usage = *st.Usage
		usage.Reported = true
	}
	id := "resp_" + strconv.Itoa(n+1)
	return &llm.Response{
		Message: msg, FinishReason: finish, RawFinishReason: string(finish),
		Usage: usage, Model: model, ID: id,
	}
}

// estimate follows the rule of thumb of about four bytes a token, at least
// one output token when there is any output.
func estimate(req *llm.Request, st Step) llm.Usage {
	in := len(req.System)
	if b, err := json.Marshal(req.Messages); err == nil {
		in += len(b)
	}
	for _, t := range req.Tools {
		in += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	out := len(st.Text) + len(st.Reasoning)
	for _, c := range st.Calls {
		out += len(c.Name) + len(c.Arguments)
	}
	u := llm.Usage{InputTokens: int64(in / 4), OutputTokens: int64(out / 4), Reported: true}
	if out > 0 && u.OutputTokens == 0 {
		u.OutputTokens = 1
	}
	if st.Reasoning != "" {
		u.ReasoningTokens = max(1, int64(len(st.Reasoning)/4))
	}
	return u
}

// copyRequest copies what a test may read later: the engine reuses its
// request between calls.
func copyRequest(req *llm.Request) llm.Request {
	c := *req
	c.Wire = nil
	c.Tools = slices.Clone(req.Tools)
	c.Messages = make([]llm.Message, len(req.Messages))
	for i, m := range req.Messages {
		m.Content = slices.Clone(m.Content)
		m.ToolCalls = slices.Clone(m.ToolCalls)
		c.Messages[i] = m
	}
	return c
}

// split cuts s into pieces of at most deltaBytes, never inside a UTF-8
// sequence.
func split(s string) []string {
	var out []string
	for len(s) > deltaBytes {
		i := deltaBytes
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		if i == 0 {
			_, i = utf8.DecodeRuneInString(s)
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}
