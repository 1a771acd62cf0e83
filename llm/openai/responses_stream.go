package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/internal/accum"
)

// errNoCompleted is the cause when a Responses stream ends before its
// response.completed (or .incomplete) event.
var errNoCompleted = fmt.Errorf("stream ended without response.completed: %w", errNoEnd)

// rsEvent is the union of the Responses stream events we read.
type rsEvent struct {
	Type        string          `json:"type"`
	OutputIndex int             `json:"output_index"`
	ItemID      string          `json:"item_id"`
	Delta       string          `json:"delta"`
	Arguments   string          `json:"arguments"`
	Item        json.RawMessage `json:"item"`
	Response    *rsEventResp    `json:"response"`
	// Flat error fields of an `error` event.
	Code    json.RawMessage `json:"code"`
	Message string          `json:"message"`
}

type rsEventResp struct {
	ID                string          `json:"id"`
	Model             string          `json:"model"`
	Status            string          `json:"status"`
	Error             json.RawMessage `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Usage *rsWireUsage `json:"usage"`
}

type rsWireUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

// rsItemHead is the part of an output item we read.
type rsItemHead struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// rsAssembler turns Responses events into llm events and the final
// response. It does no I/O.
type rsAssembler struct {
	s         accum.Stream
	reqModel  string
	replay    bool
	items     []json.RawMessage
	calls     map[int]*accum.Call // by output_index
	finish    llm.FinishReason
	rawFinish string
	completed bool
}

// feed consumes one event; a non-nil error object (raw) means the stream
// reported a failure.
func (a *rsAssembler) feed(name string, data []byte) (events []llm.Event, failure json.RawMessage, err error) {
	a.s.Begin()
	var ev rsEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, nil, fmt.Errorf("malformed event: %w", err)
	}
	typ := ev.Type
	if typ == "" {
		typ = name
	}
	switch typ {
	case "response.created", "response.in_progress":
		if r := ev.Response; r != nil {
			a.s.ID, a.s.Model = r.ID, r.Model
		}
	case "response.output_item.added":
		var it rsItemHead
		if json.Unmarshal(ev.Item, &it) == nil && it.Type == "function_call" {
			a.newCall(ev.OutputIndex, &it)
		}
	case "response.output_text.delta":
		a.s.Text(ev.Delta)
	case "response.reasoning_summary_part.added":
		if a.s.HasReasoning() {
			a.s.Note("\n\n")
		}
	case "response.reasoning_summary_text.delta":
		a.s.Reasoning(ev.Delta)
	case "response.function_call_arguments.delta":
		if c := a.calls[ev.OutputIndex]; c != nil {
			a.s.Args(c, ev.Delta)
		}
	case "response.output_item.done":
		a.itemDone(ev.OutputIndex, ev.Item)
	case "response.completed", "response.incomplete":
		a.complete(ev.Response)
	case "response.failed":
		if ev.Response != nil && len(ev.Response.Error) > 0 && !bytes.Equal(ev.Response.Error, []byte("null")) {
			return nil, ev.Response.Error, nil
		}
		return nil, data, nil
	case "error":
		return nil, data, nil
	}
	return a.s.Events(), nil, nil
}

func (a *rsAssembler) newCall(outputIndex int, it *rsItemHead) *accum.Call {
	if a.calls == nil {
		a.calls = map[int]*accum.Call{}
	}
	c := a.s.NewCall(it.CallID, it.Name)
	a.calls[outputIndex] = c
	return c
}

// itemDone keeps a finished reasoning item exactly as received (compacted,
// which is how it is stored and replayed) and fills a call's arguments
// when no deltas carried them.
func (a *rsAssembler) itemDone(index int, raw json.RawMessage) {
	var it rsItemHead
	if json.Unmarshal(raw, &it) != nil {
		return
	}
	switch it.Type {
	case "reasoning", "compaction":
		if !a.replay {
			return
		}
		var b bytes.Buffer
		if json.Compact(&b, raw) == nil {
			a.items = append(a.items, b.Bytes())
		}
	case "function_call":
		c := a.calls[index]
		if c == nil {
			c = a.newCall(index, &it)
		}
		if c.Args.Len() == 0 {
			a.s.Args(c, it.Arguments)
		}
	}
}

func (a *rsAssembler) complete(r *rsEventResp) {
	a.completed = true
	a.s.Flush()
	if r == nil {
		return
	}
	a.s.Identify(r.ID, r.Model)
	if u := r.Usage; u != nil {
		a.s.SetUsage(u.InputTokens, u.InputTokensDetails.CachedTokens, u.OutputTokens, u.OutputTokensDetails.ReasoningTokens)
	}
	a.rawFinish = r.Status
	switch {
	case r.Status == "incomplete" && r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "max_output_tokens":
		a.finish, a.rawFinish = llm.FinishLength, "max_output_tokens"
	case r.Status == "incomplete" && r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "content_filter":
		a.finish, a.rawFinish = llm.FinishContentFilter, "content_filter"
	case len(a.s.Calls()) > 0:
		a.finish = llm.FinishToolCalls
	case r.Status == "completed":
		a.finish = llm.FinishStop
	}
}

func (a *rsAssembler) response() *llm.Response {
	msg, reasoning := a.s.Message("{}")
	if reasoning != "" || len(a.items) > 0 {
		msg.Reasoning = &llm.Reasoning{Text: reasoning, Items: a.items, API: ResponsesAPI, Model: a.reqModel}
	}
	return a.s.Response(msg, a.finish, a.rawFinish)
}

// Stream sends req as a streaming Responses call and yields the answer as
// it arrives, following the closing rule of llm.Provider.
func (p *Responses) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		if req == nil {
			yield(llm.Event{}, p.localError("", "nil request"))
			return
		}
		p.stream(ctx, req, yield)
	}
}

func (p *Responses) stream(ctx context.Context, req *llm.Request, yield func(llm.Event, error) bool) {
	o := p.options
	o.compact = !p.compactionOff.has(req.Session) && p.compaction.gated(req.Model)
	o.threshold = p.compaction.threshold
	if !p.streamOnce(ctx, req, o, yield) && o.compact {
		// The endpoint refused context_management: native compaction is
		// off for this session from now on (local compression still runs)
		// and the call is sent again without it, once. Other sessions keep
		// it: one session's refusal says nothing about another's request.
		p.compactionOff.add(req.Session)
		o.compact = false
		p.streamOnce(ctx, req, o, yield)
	}
}

// streamOnce makes one call. It returns false, having yielded
// nothing, only when o.compact is set and the endpoint rejected the
// context_management field.
func (p *Responses) streamOnce(ctx context.Context, req *llm.Request, o responsesOptions, yield func(llm.Event, error) bool) bool {
	ctx, body, release, err := encode(ctx, req,
		func() ([]byte, error) { return encodeResponsesRequest(req, o) },
		func() ([]byte, string, error) { return encodeResponsesIncremental(req, o, &p.tools) })
	if err != nil {
		yield(llm.Event{}, p.localError(req.Model, err.Error()))
		return true
	}
	defer release()
	resp, capt, err := p.post(ctx, "responses", body, req.APIKey)
	if err != nil {
		e := p.requestError(ctx, req.Model, err, capt)
		if o.compact && contextManagementRejected(e) {
			return false
		}
		yield(llm.Event{}, e)
		return true
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		yield(llm.Event{}, p.requestError(ctx, req.Model, nil, capt))
		return true
	}
	asm := &rsAssembler{reqModel: req.Model, replay: p.options.replay}
	dec := ssestream.NewDecoder(resp)
	for dec.Next() {
		if ctx.Err() != nil {
			yield(llm.Event{}, p.transportError(ctx, req.Model, ctx.Err(), true, asm.s.PartialText()))
			return true
		}
		ev := dec.Event()
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 {
			continue
		}
		events, failure, err := asm.feed(ev.Type, data)
		if err != nil {
			e := p.newError(req.Model)
			e.Body, e.Message, e.Err = capBody(data), err.Error(), err
			e.MidStream, e.PartialText = true, asm.s.PartialText()
			yield(llm.Event{}, e)
			return true
		}
		if failure != nil {
			e := p.streamError(req.Model, resp.Header, data, failure, true, asm.s.PartialText())
			yield(llm.Event{}, e)
			return true
		}
		for _, e := range events {
			if !yield(e, nil) {
				return true
			}
		}
		if asm.completed {
			drain(resp.Body)
			yield(llm.Event{Type: llm.EventDone, Response: asm.response()}, nil)
			return true
		}
	}
	err = dec.Err()
	if err == nil {
		err = errNoCompleted
	}
	yield(llm.Event{}, p.transportError(ctx, req.Model, err, true, asm.s.PartialText()))
	return true
}
