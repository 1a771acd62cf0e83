package fakellm

import (
	"cmp"
	"encoding/json"
	"net/http"
	"strings"
)

// geminiWire renders generateContent replies: SSE "data:" chunks, each a
// GenerateContentResponse, the last one with finishReason and full usage.
type geminiWire struct{}

type gmResponse struct {
	Candidates     []gmCandidate   `json:"candidates,omitempty"`
	PromptFeedback *gmFeedback     `json:"promptFeedback,omitempty"`
	UsageMetadata  json.RawMessage `json:"usageMetadata,omitempty"`
	ModelVersion   string          `json:"modelVersion"`
	ResponseID     string          `json:"responseId"`
}

type gmCandidate struct {
	Content       gmContent  `json:"content"`
	FinishReason  string     `json:"finishReason,omitempty"`
	Index         int        `json:"index"`
	SafetyRatings []gmSafety `json:"safetyRatings,omitempty"`
}

type gmSafety struct {
	Category    string `json:"category"`
	Probability string `json:"probability"`
	Blocked     bool   `json:"blocked,omitempty"`
}

type gmFeedback struct {
	BlockReason   string     `json:"blockReason"`
	SafetyRatings []gmSafety `json:"safetyRatings"`
}

type gmUsage struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount,omitempty"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount,omitempty"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount,omitempty"`
	TotalTokenCount         int64 `json:"totalTokenCount"`
}

func (geminiWire) requestIDHeader() string { return "x-goog-request-id" }

// gmStatus is Google's status enum for an HTTP status.
func gmStatus(code int) string {
	switch code {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	if code < 500 {
		// Billing (402) and other client errors: Google's catch-all for a
		// request the account or state cannot serve.
		return "FAILED_PRECONDITION"
	}
	return "INTERNAL"
}

func (geminiWire) errorJSON(e *ErrorReply, _ string) []byte {
	code := cmp.Or(e.Status, http.StatusInternalServerError)
	status := e.Type
	if status == "" || strings.ToUpper(status) != status {
		status = gmStatus(code)
	}
	type gmErr struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
	}
	return mustJSON(map[string]gmErr{"error": {Code: code, Message: e.Message, Status: status}})
}

func (w geminiWire) errorEvent(e *ErrorReply, requestID string) []byte {
	return sseData(errorBody(w, e, requestID))
}

// gmFinish maps a neutral finish to Gemini's finishReason.
func gmFinish(neutral string) string {
	switch neutral {
	case "stop", "tool_calls":
		return "STOP"
	case "length":
		return "MAX_TOKENS"
	case "content_filter", "refusal":
		return "SAFETY"
	}
	return neutral
}

func gmUsageOf(u *Usage) json.RawMessage {
	if u == nil {
		return nil
	}
	prompt := u.Input + u.CacheRead + u.CacheWrite
	cands := max(u.Output-u.Reasoning, 0)
	return mustJSON(gmUsage{PromptTokenCount: prompt, CandidatesTokenCount: cands, CachedContentTokenCount: u.CacheRead,
		ThoughtsTokenCount: u.Reasoning, TotalTokenCount: prompt + u.Output})
}

// gmPromptBlocked reports whether r is a blocked prompt: a content filter
// with nothing generated comes back as promptFeedback without candidates.
func gmPromptBlocked(r *reply) bool {
	return (r.finish == "content_filter" || r.finish == "refusal") && r.text == "" && len(r.calls) == 0 && r.reasoning == ""
}

// gmParts are the reply's parts: thought summary, text, function calls
// (the first signed).
func gmParts(r *reply) (thought, text, calls []gmPart) {
	if r.reasoning != "" {
		s := r.reasoning
		thought = []gmPart{{Text: &s, Thought: true}}
	}
	if r.text != "" {
		s := r.text
		text = []gmPart{{Text: &s}}
	}
	for i, c := range r.calls {
		args := json.RawMessage(strings.TrimSpace(c.Arguments))
		if len(args) == 0 || !json.Valid(args) {
			args = json.RawMessage("{}")
		}
		p := gmPart{FunctionCall: &gmFunctionCall{Name: c.Name, Args: args}}
		if i == 0 {
			p.ThoughtSignature = gmSignature(r.epoch, r.model, c.Name)
		}
		calls = append(calls, p)
	}
	return thought, text, calls
}

func (geminiWire) message(r *reply) []byte {
	resp := gmResponse{ModelVersion: r.model, ResponseID: r.id, UsageMetadata: gmUsageOf(r.usage)}
	if gmPromptBlocked(r) {
		resp.PromptFeedback = &gmFeedback{BlockReason: "SAFETY", SafetyRatings: []gmSafety{{Category: "HARM_CATEGORY_DANGEROUS_CONTENT", Probability: "HIGH", Blocked: true}}}
		return mustJSON(resp)
	}
	thought, text, calls := gmParts(r)
	parts := append(append(append([]gmPart{}, thought...), text...), calls...)
	resp.Candidates = []gmCandidate{{Content: gmContent{Role: "model", Parts: parts}, FinishReason: gmFinish(r.finish)}}
	return mustJSON(resp)
}

func (geminiWire) events(r *reply) (events [][]byte, cut int) {
	chunk := func(parts []gmPart, finish string, usage json.RawMessage) {
		resp := gmResponse{ModelVersion: r.model, ResponseID: r.id, UsageMetadata: usage,
			Candidates: []gmCandidate{{Content: gmContent{Role: "model", Parts: parts}, FinishReason: finish}}}
		if parts == nil {
			resp.Candidates[0].Content.Parts = []gmPart{}
		}
		if finish == "SAFETY" {
			resp.Candidates[0].SafetyRatings = []gmSafety{{Category: "HARM_CATEGORY_DANGEROUS_CONTENT", Probability: "HIGH", Blocked: true}}
		}
		events = append(events, sseData(mustJSON(resp)))
	}
	if gmPromptBlocked(r) {
		resp := gmResponse{ModelVersion: r.model, ResponseID: r.id, UsageMetadata: gmUsageOf(r.usage),
			PromptFeedback: &gmFeedback{BlockReason: "SAFETY", SafetyRatings: []gmSafety{{Category: "HARM_CATEGORY_DANGEROUS_CONTENT", Probability: "HIGH", Blocked: true}}}}
		events = append(events, sseData(mustJSON(resp)))
		return events, 0
	}
	thought, text, calls := gmParts(r)
	// Interim chunks carry the prompt side of usage, as Gemini does.
	var interim json.RawMessage
	if r.usage != nil {
		interim = mustJSON(gmUsage{PromptTokenCount: r.usage.Input + r.usage.CacheRead, TotalTokenCount: r.usage.Input + r.usage.CacheRead})
	}
	if len(thought) > 0 {
		for _, p := range split(*thought[0].Text, textChunkBytes*4) {
			chunk([]gmPart{{Text: &p, Thought: true}}, "", interim)
		}
	}
	if len(text) > 0 {
		for _, p := range split(*text[0].Text, textChunkBytes) {
			chunk([]gmPart{{Text: &p}}, "", interim)
		}
	}
	if len(calls) > 0 {
		// Gemini sends a turn's function calls whole, in one chunk.
		chunk(calls, "", interim)
	}
	// A cut stream loses the final chunk (finishReason and usage).
	cut = len(events)
	chunk(nil, gmFinish(r.finish), gmUsageOf(r.usage))
	return events, cut
}
