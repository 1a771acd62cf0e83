package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/turn"
)

// responsesRequest is the part of a Responses API request Talaria reads.
type responsesRequest struct {
	Model        string            `json:"model"`
	Input        json.RawMessage   `json:"input"`
	Instructions string            `json:"instructions"`
	Stream       bool              `json:"stream"`
	Previous     string            `json:"previous_response_id"`
	Tools        []json.RawMessage `json:"tools"`
}

// responseID names a turn's response so that previous_response_id finds
// its session again: resp_<session>_<turn>.
func responseID(sessionID, turnID string) string { return "resp_" + sessionID + "_" + turnID }

// sessionOfResponse reads the session out of a response id.
func sessionOfResponse(id string) (string, bool) {
	rest, ok := strings.CutPrefix(id, "resp_")
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(rest, '_')
	if i <= 0 {
		return "", false
	}
	return rest[:i], true
}

func (req *responsesRequest) conversation() ([]oaiMsg, string, error) {
	if len(req.Tools) > 0 {
		return nil, "", badParam("tools", "unsupported_parameter", "client-side tools are not supported: Talaria runs its own tools and returns the answer")
	}
	system := req.Instructions
	var s string
	if len(req.Input) == 0 || string(req.Input) == "null" {
		return nil, "", badParam("input", "", "input is required")
	}
	if json.Unmarshal(req.Input, &s) == nil {
		return []oaiMsg{{role: "user", text: s}}, system, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(req.Input, &items); err != nil {
		return nil, "", badParam("input", "", "input must be a string or an array of messages")
	}
	var history []oaiMsg
	for i, raw := range items {
		param := fmt.Sprintf("input[%d]", i)
		var it struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(raw, &it); err != nil {
			return nil, "", badParam(param, "", "an input item must be an object")
		}
		if it.Type != "" && it.Type != "message" {
			return nil, "", badParam(param+".type", "unsupported_input", "input item type "+strconv.Quote(it.Type)+" is not supported: send messages (Talaria runs its own tools)")
		}
		text, err := contentText(it.Content, param+".content")
		if err != nil {
			return nil, "", err
		}
		switch it.Role {
		case "system", "developer":
			system = strings.TrimSpace(system + "\n\n" + text)
		case "user", "assistant":
			history = append(history, oaiMsg{role: it.Role, text: text})
		default:
			return nil, "", badParam(param+".role", "unsupported_role", "role "+strconv.Quote(it.Role)+" is not supported")
		}
	}
	return history, system, nil
}

func (g *Gateway) responses(w http.ResponseWriter, r *http.Request) {
	var req responsesRequest
	history, system, ok := g.oaiConversation(w, r, &req)
	if !ok {
		return
	}
	sid := strings.TrimSpace(r.Header.Get(SessionHeader))
	if req.Previous != "" {
		prev, ok := sessionOfResponse(req.Previous)
		if !ok {
			writeOAIError(w, &oaiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: strp("previous_response_id"), Code: strp(api.CodeNotFound),
				Message: "no response " + req.Previous})
			return
		}
		if sid != "" && sid != prev {
			writeOAIError(w, badParam("previous_response_id", "", "previous_response_id belongs to another session than "+SessionHeader))
			return
		}
		sid = prev
	}
	tr := &oaiTurnRequest{model: req.Model, sessionID: sid, system: system, history: history, stream: req.Stream}
	sess, created, text, err := g.oaiPrepare(r.Context(), tr)
	if err != nil {
		writeOAIError(w, err)
		return
	}
	w.Header().Set(SessionHeader, sess.ID)
	rb := &responseBuilder{model: g.modelID(sess), created: g.cfg.Now().Unix(), sessionID: sess.ID, newSession: created, instructions: req.Instructions}
	if !req.Stream {
		res, err := g.followAnswer(r.Context(), sess, text, &responseCollector{w: w, rb: rb})
		if err != nil {
			writeOAIError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, rb.final(res, res.FinalText))
		return
	}
	f := &responsesFollower{s: newOAIStream(w), rb: rb}
	res, ok := g.streamAnswer(r.Context(), f.s, sess, text, f, func(err error) {
		e := toOAI(err)
		failed := rb.object("failed", nil, nil)
		failed["error"] = map[string]any{"code": e.Code, "message": e.Message}
		f.send("response.failed", map[string]any{"response": failed})
	})
	if !ok {
		return
	}
	if !f.open && res.FinalText != "" {
		f.delta(res.FinalText)
	}
	f.finish(res)
}

// responseBuilder makes Response objects and stream events of one turn.
type responseBuilder struct {
	model, sessionID, turnID, instructions string
	created                                int64
	newSession                             bool
}

func (b *responseBuilder) id() string     { return responseID(b.sessionID, b.turnID) }
func (b *responseBuilder) itemID() string { return "msg_" + b.turnID }

// object is a Response with status and output.
func (b *responseBuilder) object(status string, output []any, usage map[string]any) map[string]any {
	if output == nil {
		output = []any{}
	}
	var instructions any
	if b.instructions != "" {
		instructions = b.instructions
	}
	return map[string]any{
		"id": b.id(), "object": "response", "created_at": b.created, "status": status, "model": b.model,
		"output": output, "usage": usage, "error": nil, "incomplete_details": nil, "instructions": instructions,
		"parallel_tool_calls": false, "tool_choice": "none", "tools": []any{}, "metadata": map[string]any{},
		"temperature": nil, "top_p": nil, "text": map[string]any{"format": map[string]any{"type": "text"}},
	}
}

func (b *responseBuilder) part(text string) map[string]any {
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
}

func (b *responseBuilder) message(status, text string, parts bool) map[string]any {
	content := []any{}
	if parts {
		content = append(content, b.part(text))
	}
	return map[string]any{"type": "message", "id": b.itemID(), "status": status, "role": "assistant", "content": content}
}

// final is the finished Response of res with text.
func (b *responseBuilder) final(res turn.Result, text string) map[string]any {
	b.turnID = res.TurnID
	status := "completed"
	var incomplete any
	switch {
	case res.Truncated:
		status, incomplete = "incomplete", map[string]any{"reason": "max_output_tokens"}
	case res.Exit == turn.ExitInterrupted:
		status, incomplete = "incomplete", map[string]any{"reason": "interrupted"}
	}
	itemStatus := "completed"
	if status != "completed" {
		itemStatus = "incomplete"
	}
	o := b.object(status, []any{b.message(itemStatus, text, true)}, responsesUsage(oaiUsage(res)))
	o["incomplete_details"] = incomplete
	o["output_text"] = text
	o["talaria"] = infoOf(res, b.newSession)
	return o
}

func responsesUsage(u llm.Usage) map[string]any {
	return map[string]any{
		"input_tokens": u.PromptTokens(), "output_tokens": u.OutputTokens, "total_tokens": u.PromptTokens() + u.OutputTokens,
		"input_tokens_details":  map[string]any{"cached_tokens": u.CacheReadTokens},
		"output_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
	}
}

// responseCollector follows a non-streamed Responses request.
type responseCollector struct {
	w  http.ResponseWriter
	rb *responseBuilder
}

func (c *responseCollector) started(turnID string) {
	c.rb.turnID = turnID
	c.w.Header().Set(TurnHeader, turnID)
}
func (c *responseCollector) event(EventType, turnEvent) {}
func (c *responseCollector) beat() bool                 { return true }

// responsesFollower streams a turn as Responses API events: created,
// in_progress, one message item with one output_text part and its deltas,
// then the done events and response.completed (with usage).
type responsesFollower struct {
	s     *oaiStream
	rb    *responseBuilder
	seq   int
	begun bool // response.created is out
	open  bool // the message item and its part are open
	text  strings.Builder
	join  textJoin
}

func (f *responsesFollower) started(turnID string) {
	f.rb.turnID = turnID
	f.s.w.Header().Set(TurnHeader, turnID)
}

func (f *responsesFollower) send(typ string, fields map[string]any) {
	fields["type"] = typ
	fields["sequence_number"] = f.seq
	f.seq++
	f.s.send(typ, fields)
}

// begin sends response.created and response.in_progress once.
func (f *responsesFollower) begin() {
	if f.begun {
		return
	}
	f.begun = true
	f.send("response.created", map[string]any{"response": f.rb.object("in_progress", nil, nil)})
	f.send("response.in_progress", map[string]any{"response": f.rb.object("in_progress", nil, nil)})
}

func (f *responsesFollower) openItem() {
	f.begin()
	if f.open {
		return
	}
	f.open = true
	f.send("response.output_item.added", map[string]any{"output_index": 0, "item": f.rb.message("in_progress", "", false)})
	f.send("response.content_part.added", map[string]any{"item_id": f.rb.itemID(), "output_index": 0, "content_index": 0,
		"part": f.rb.part("")})
}

func (f *responsesFollower) delta(s string) {
	f.openItem()
	f.text.WriteString(s)
	f.send("response.output_text.delta", map[string]any{"item_id": f.rb.itemID(), "output_index": 0, "content_index": 0,
		"delta": s, "logprobs": []any{}})
}

func (f *responsesFollower) event(typ EventType, ev turnEvent) {
	f.join.event(typ, ev, f.begin, f.delta)
}

func (f *responsesFollower) beat() bool {
	f.begin()
	return f.s.raw(": ping")
}

// finish closes the part and item and sends the final Response. The
// item's text is what was streamed, so the deltas add up to it.
func (f *responsesFollower) finish(res turn.Result) {
	f.openItem()
	text := f.text.String()
	o := f.rb.final(res, text)
	item := o["output"].([]any)[0].(map[string]any)
	f.send("response.output_text.done", map[string]any{"item_id": f.rb.itemID(), "output_index": 0, "content_index": 0, "text": text, "logprobs": []any{}})
	f.send("response.content_part.done", map[string]any{"item_id": f.rb.itemID(), "output_index": 0, "content_index": 0, "part": f.rb.part(text)})
	f.send("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	typ := "response.completed"
	if o["status"] == "incomplete" {
		typ = "response.incomplete"
	}
	f.send(typ, map[string]any{"response": o})
}
