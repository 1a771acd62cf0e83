package fakellm

import (
	"cmp"
	"encoding/json"
	"strconv"
	"strings"
)

// responsesWire renders OpenAI Responses replies: typed SSE events
// (response.created … response.completed) and the response object.
type responsesWire struct{}

type rsUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

type rsResponse struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	CreatedAt         int64           `json:"created_at"`
	Status            string          `json:"status"`
	Error             *oaError        `json:"error"`
	IncompleteDetails *rsIncomplete   `json:"incomplete_details"`
	Model             string          `json:"model"`
	Output            []any           `json:"output"`
	Store             bool            `json:"store"`
	Usage             json.RawMessage `json:"usage"`
}

type rsIncomplete struct {
	Reason string `json:"reason"`
}

type rsOutReasoning struct {
	ID               string      `json:"id"`
	Type             string      `json:"type"`
	Summary          []rsSummary `json:"summary"`
	EncryptedContent string      `json:"encrypted_content,omitempty"`
}

type rsOutCompaction struct {
	ID               string `json:"id"`
	Type             string `json:"type"`
	EncryptedContent string `json:"encrypted_content"`
}

type rsOutMessage struct {
	ID      string         `json:"id"`
	Type    string         `json:"type"`
	Status  string         `json:"status"`
	Role    string         `json:"role"`
	Content []rsOutputText `json:"content"`
}

type rsOutputText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
}

type rsOutCall struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	Arguments string `json:"arguments"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
}

func (responsesWire) requestIDHeader() string { return "x-request-id" }

func (responsesWire) errorJSON(e *ErrorReply, requestID string) []byte {
	return openaiWire{}.errorJSON(e, requestID)
}

// errorEvent is the stream's `error` event.
func (responsesWire) errorEvent(e *ErrorReply, _ string) []byte {
	if e.Body != "" {
		return sseEvent("error", []byte(e.Body))
	}
	return sseEvent("error", mustJSON(struct {
		Type    string  `json:"type"`
		Code    *string `json:"code"`
		Message string  `json:"message"`
		Param   *string `json:"param"`
	}{"error", nullable(cmp.Or(e.Code, e.Type, "server_error")), e.Message, nullable(e.Param)}))
}

// rsItemIDs derives the output item ids from the reply id, so they are
// unique per server like the reply ids.
func rsItemIDs(r *reply) (reasoning, message string, calls []string) {
	n := strings.TrimPrefix(r.id, "resp_fake")
	calls = make([]string, len(r.calls))
	for i := range r.calls {
		calls[i] = "fc_fake" + n + "_" + strconv.Itoa(i)
	}
	return "rs_fake" + n, "msg_fake" + n, calls
}

// rsOutput builds the complete output items of r.
func rsOutput(r *reply) []any {
	rsID, msgID, callIDs := rsItemIDs(r)
	var out []any
	if r.compact {
		id := "cmp" + strings.TrimPrefix(rsID, "rs")
		out = append(out, rsOutCompaction{ID: id, Type: "compaction", EncryptedContent: rsEncrypted(r.epoch, r.model, id, "compaction")})
	}
	if r.reasoning != "" {
		out = append(out, rsOutReasoning{ID: rsID, Type: "reasoning", Summary: []rsSummary{{Type: "summary_text", Text: r.reasoning}},
			EncryptedContent: rsEncrypted(r.epoch, r.model, rsID, r.reasoning)})
	}
	if r.text != "" {
		out = append(out, rsOutMessage{ID: msgID, Type: "message", Status: "completed", Role: "assistant",
			Content: []rsOutputText{{Type: "output_text", Text: r.text, Annotations: []any{}}}})
	}
	for i, c := range r.calls {
		out = append(out, rsOutCall{ID: callIDs[i], Type: "function_call", Status: "completed", Arguments: c.Arguments, CallID: c.ID, Name: c.Name})
	}
	return out
}

func rsUsageOf(u *Usage) json.RawMessage {
	if u == nil {
		return json.RawMessage("null")
	}
	var w rsUsage
	w.InputTokens = u.Input + u.CacheRead + u.CacheWrite
	w.InputTokensDetails.CachedTokens = u.CacheRead
	w.OutputTokens = u.Output
	w.OutputTokensDetails.ReasoningTokens = u.Reasoning
	w.TotalTokens = w.InputTokens + w.OutputTokens
	return mustJSON(w)
}

// rsFinal is the finished response object and its event type.
func rsFinal(r *reply) (rsResponse, string) {
	resp := rsResponse{ID: r.id, Object: "response", CreatedAt: r.created, Status: "completed", Model: r.model,
		Output: rsOutput(r), Usage: rsUsageOf(r.usage)}
	if resp.Output == nil {
		resp.Output = []any{}
	}
	switch r.finish {
	case "length":
		resp.Status, resp.IncompleteDetails = "incomplete", &rsIncomplete{Reason: "max_output_tokens"}
	case "content_filter", "refusal":
		resp.Status, resp.IncompleteDetails = "incomplete", &rsIncomplete{Reason: "content_filter"}
	}
	if resp.Status == "incomplete" {
		return resp, "response.incomplete"
	}
	return resp, "response.completed"
}

func (responsesWire) message(r *reply) []byte {
	resp, _ := rsFinal(r)
	return mustJSON(resp)
}

func (responsesWire) events(r *reply) (events [][]byte, cut int) {
	seq := 0
	add := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		events = append(events, sseEvent(typ, mustJSON(fields)))
	}
	start := rsResponse{ID: r.id, Object: "response", CreatedAt: r.created, Status: "in_progress", Model: r.model, Output: []any{}, Usage: json.RawMessage("null")}
	add("response.created", map[string]any{"response": start})
	add("response.in_progress", map[string]any{"response": start})
	rsID, msgID, callIDs := rsItemIDs(r)
	out := rsOutput(r)
	idx := 0
	lastDone := -1
	done := func(item any) {
		lastDone = len(events)
		add("response.output_item.done", map[string]any{"output_index": idx, "item": item})
		idx++
	}
	if r.compact {
		add("response.output_item.added", map[string]any{"output_index": idx, "item": out[idx]})
		done(out[idx])
	}
	if r.reasoning != "" {
		add("response.output_item.added", map[string]any{"output_index": idx, "item": rsOutReasoning{ID: rsID, Type: "reasoning", Summary: []rsSummary{}}})
		add("response.reasoning_summary_part.added", map[string]any{"item_id": rsID, "output_index": idx, "summary_index": 0, "part": rsSummary{Type: "summary_text"}})
		for _, p := range split(r.reasoning, textChunkBytes) {
			add("response.reasoning_summary_text.delta", map[string]any{"item_id": rsID, "output_index": idx, "summary_index": 0, "delta": p})
		}
		add("response.reasoning_summary_text.done", map[string]any{"item_id": rsID, "output_index": idx, "summary_index": 0, "text": r.reasoning})
		done(out[idx])
	}
	if r.text != "" {
		add("response.output_item.added", map[string]any{"output_index": idx, "item": rsOutMessage{ID: msgID, Type: "message", Status: "in_progress", Role: "assistant", Content: []rsOutputText{}}})
		add("response.content_part.added", map[string]any{"item_id": msgID, "output_index": idx, "content_index": 0, "part": rsOutputText{Type: "output_text", Annotations: []any{}}})
		for _, p := range split(r.text, textChunkBytes) {
			add("response.output_text.delta", map[string]any{"item_id": msgID, "output_index": idx, "content_index": 0, "delta": p})
		}
		add("response.output_text.done", map[string]any{"item_id": msgID, "output_index": idx, "content_index": 0, "text": r.text})
		done(out[idx])
	}
	for i, c := range r.calls {
		add("response.output_item.added", map[string]any{"output_index": idx, "item": rsOutCall{ID: callIDs[i], Type: "function_call", Status: "in_progress", CallID: c.ID, Name: c.Name}})
		for _, frag := range split(c.Arguments, argsChunkBytes) {
			add("response.function_call_arguments.delta", map[string]any{"item_id": callIDs[i], "output_index": idx, "delta": frag})
		}
		add("response.function_call_arguments.done", map[string]any{"item_id": callIDs[i], "output_index": idx, "arguments": c.Arguments})
		done(out[idx])
	}
	// A cut stream stops inside its last item, the way a real one breaks.
	cut = len(events)
	if lastDone >= 0 {
		cut = lastDone
	}
	final, typ := rsFinal(r)
	add(typ, map[string]any{"response": final})
	return events, cut
}
