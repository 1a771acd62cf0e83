package fakellm

import (
	"cmp"
	"encoding/json"
	"strings"
)

// openaiWire renders Chat Completions replies.
type openaiWire struct{}

type oaError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

type oaUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
		AudioTokens      int64 `json:"audio_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens          int64 `json:"reasoning_tokens"`
		AudioTokens              int64 `json:"audio_tokens"`
		AcceptedPredictionTokens int64 `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int64 `json:"rejected_prediction_tokens"`
	} `json:"completion_tokens_details"`
}

type oaChunk struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	SystemFingerprint string          `json:"system_fingerprint"`
	Choices           []oaChunkChoice `json:"choices"`
	// Usage is null on every chunk but the last when include_usage is set,
	// and absent otherwise, as the real API does.
	Usage json.RawMessage `json:"usage,omitempty"`
}

type oaChunkChoice struct {
	Index        int       `json:"index"`
	Delta        oaDelta   `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type oaDelta struct {
	Role             string        `json:"role,omitempty"`
	Content          *string       `json:"content,omitempty"`
	ReasoningContent string        `json:"reasoning_content,omitempty"`
	ToolCalls        []oaDeltaCall `json:"tool_calls,omitempty"`
}

type oaDeltaCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaCompletion struct {
	ID                string     `json:"id"`
	Object            string     `json:"object"`
	Created           int64      `json:"created"`
	Model             string     `json:"model"`
	Choices           []oaChoice `json:"choices"`
	Usage             *oaUsage   `json:"usage,omitempty"`
	SystemFingerprint string     `json:"system_fingerprint"`
}

type oaChoice struct {
	Index        int        `json:"index"`
	Message      oaReplyMsg `json:"message"`
	Logprobs     *struct{}  `json:"logprobs"`
	FinishReason string     `json:"finish_reason"`
}

type oaReplyMsg struct {
	Role             string       `json:"role"`
	Content          *string      `json:"content"`
	Refusal          *string      `json:"refusal"`
	ReasoningContent string       `json:"reasoning_content,omitempty"`
	ToolCalls        []oaToolCall `json:"tool_calls,omitempty"`
}

const oaFingerprint = "fp_fakellm"

func (openaiWire) requestIDHeader() string { return "x-request-id" }

func (openaiWire) errorJSON(e *ErrorReply, _ string) []byte {
	return mustJSON(map[string]oaError{"error": {Message: e.Message, Type: cmp.Or(e.Type, "server_error"), Param: nullable(e.Param), Code: nullable(e.Code)}})
}

func (w openaiWire) errorEvent(e *ErrorReply, requestID string) []byte {
	return sseData(errorBody(w, e, requestID))
}

// oaFinish maps a neutral finish to Chat Completions' finish_reason.
func oaFinish(neutral string) string {
	if neutral == "refusal" {
		return "content_filter"
	}
	return neutral
}

func oaUsageOf(u *Usage) *oaUsage {
	if u == nil {
		return nil
	}
	o := &oaUsage{PromptTokens: u.Input + u.CacheRead + u.CacheWrite, CompletionTokens: u.Output}
	o.TotalTokens = o.PromptTokens + o.CompletionTokens
	o.PromptTokensDetails.CachedTokens = u.CacheRead
	o.PromptTokensDetails.CacheWriteTokens = u.CacheWrite
	o.CompletionTokensDetails.ReasoningTokens = u.Reasoning
	return o
}

func (openaiWire) message(r *reply) []byte {
	msg := oaReplyMsg{Role: "assistant", ReasoningContent: r.reasoning}
	if r.text != "" || len(r.calls) == 0 {
		msg.Content = &r.text
	}
	for _, c := range r.calls {
		var fc oaToolCall
		fc.ID, fc.Type = c.ID, "function"
		fc.Function.Name, fc.Function.Arguments = c.Name, c.Arguments
		msg.ToolCalls = append(msg.ToolCalls, fc)
	}
	return mustJSON(oaCompletion{
		ID: r.id, Object: "chat.completion", Created: r.created, Model: r.model,
		Choices:           []oaChoice{{Message: msg, FinishReason: oaFinish(r.finish)}},
		Usage:             oaUsageOf(r.usage),
		SystemFingerprint: oaFingerprint,
	})
}

func (openaiWire) events(r *reply) (events [][]byte, cut int) {
	chunk := func(d oaDelta, finish *string) []byte {
		c := oaChunk{
			ID: r.id, Object: "chat.completion.chunk", Created: r.created, Model: r.model,
			SystemFingerprint: oaFingerprint,
			Choices:           []oaChunkChoice{{Delta: d, FinishReason: finish}},
		}
		if r.includeUsage {
			c.Usage = json.RawMessage("null")
		}
		return sseData(mustJSON(c))
	}
	empty := ""
	events = append(events, chunk(oaDelta{Role: "assistant", Content: &empty}, nil))
	for _, p := range split(r.reasoning, textChunkBytes) {
		events = append(events, chunk(oaDelta{ReasoningContent: p}, nil))
	}
	for _, p := range split(r.text, textChunkBytes) {
		events = append(events, chunk(oaDelta{Content: &p}, nil))
	}
	for i, c := range r.calls {
		// The first delta of a call names it; later ones carry only the
		// index and the next fragment of the arguments.
		var head oaDeltaCall
		head.Index, head.ID, head.Type = i, c.ID, "function"
		head.Function.Name = c.Name
		events = append(events, chunk(oaDelta{ToolCalls: []oaDeltaCall{head}}, nil))
		for _, frag := range split(c.Arguments, argsChunkBytes) {
			var d oaDeltaCall
			d.Index = i
			d.Function.Arguments = frag
			events = append(events, chunk(oaDelta{ToolCalls: []oaDeltaCall{d}}, nil))
		}
	}
	cut = len(events)
	finish := oaFinish(r.finish)
	events = append(events, chunk(oaDelta{}, &finish))
	if r.includeUsage && r.usage != nil {
		last := oaChunk{
			ID: r.id, Object: "chat.completion.chunk", Created: r.created, Model: r.model,
			SystemFingerprint: oaFingerprint, Choices: []oaChunkChoice{},
			Usage: mustJSON(oaUsageOf(r.usage)),
		}
		events = append(events, sseData(mustJSON(last)))
	}
	events = append(events, sseData([]byte("[DONE]")))
	return events, cut
}

// sseData frames one data-only server-sent event. Multi-line payloads
// (a raw error body) become several data lines, which clients rejoin.
func sseData(payload []byte) []byte {
	var b strings.Builder
	for _, line := range strings.Split(string(payload), "\n") {
		b.WriteString("data: ")
		b.WriteString(strings.TrimSuffix(line, "\r"))
		b.WriteString("\n")
	}
	b.WriteString("\n")
	return []byte(b.String())
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
