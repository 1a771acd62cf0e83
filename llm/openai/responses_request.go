package openai

import (
	"encoding/json"
	"strings"

	"github.com/talaria-agent/talaria/llm"
)

// ResponsesAPI is the wire format name stamped on replay state issued in
// Responses mode (llm.Reasoning.API) and on the Responses provider's errors
// (llm.APIError.API).
const ResponsesAPI = "openai-responses"

// rsRequest is the Responses request body, fields in a fixed order so the
// same llm.Request always yields the same bytes.
type rsRequest struct {
	Model             string                `json:"model"`
	Instructions      string                `json:"instructions,omitempty"`
	Input             []any                 `json:"input"`
	Tools             []rsTool              `json:"tools,omitempty"`
	MaxOutputTokens   int                   `json:"max_output_tokens,omitempty"`
	Temperature       *float64              `json:"temperature,omitempty"`
	Reasoning         *rsReasoning          `json:"reasoning,omitempty"`
	Include           []string              `json:"include,omitempty"`
	ContextManagement []rsContextManagement `json:"context_management,omitempty"`
	Store             bool                  `json:"store"`
	Stream            bool                  `json:"stream"`
}

type rsReasoning struct {
	Effort  string `json:"effort,omitempty"`
	Summary string `json:"summary,omitempty"`
}

type rsTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

type rsMessage struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content any    `json:"content"` // string, or []rsPart
}

type rsPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
}

type rsFunctionCall struct {
	Type      string `json:"type"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type rsFunctionOutput struct {
	Type   string `json:"type"`
	CallID string `json:"call_id"`
	Output string `json:"output"`
}

// responsesOptions are the Responses-mode settings of a Provider.
type responsesOptions struct {
	effort, summary string
	// replay is the kill switch: false neither asks for encrypted
	// reasoning nor sends any back.
	replay bool
	// compact carries context_management when the request is gated in.
	compact bool
	// threshold is its compact_threshold.
	threshold int
}

// encodeResponsesRequest turns req into a Responses body. Deterministic:
// replayed reasoning items are the stored bytes, everything else is built
// from the request in order.
//
// Reasoning replay: the boundary is the last user message. Every reasoning
// item of the assistant messages after it (the current turn, which spans
// several assistant messages and tool results) goes back, in place, before
// the output it led to; items of earlier turns are pruned. Only items this
// format issued for this very model are sent: encrypted content from
// another model (after a fallback) cannot be read and is rejected.
func encodeResponsesRequest(req *llm.Request, o responsesOptions) ([]byte, error) {
	w := rsRequest{
		Model:        req.Model,
		Instructions: req.System,
		Input:        make([]any, 0, len(req.Messages)+4),
		Temperature:  req.Temperature,
		Stream:       true,
		// Stateless: nothing is kept server-side, so reasoning comes back
		// encrypted and is replayed from Talaria's own store.
		Store: false,
	}
	if req.MaxTokens > 0 {
		w.MaxOutputTokens = req.MaxTokens
	}
	if o.effort != "" || o.summary != "" {
		w.Reasoning = &rsReasoning{Effort: o.effort, Summary: o.summary}
	}
	if o.replay {
		w.Include = []string{"reasoning.encrypted_content"}
	}
	if o.compact {
		w.ContextManagement = []rsContextManagement{{Type: "compaction", CompactThreshold: o.threshold}}
	}
	boundary := -1
	for i, m := range req.Messages {
		if m.Role == llm.RoleUser {
			boundary = i
		}
	}
	// A compaction checkpoint replaces the history before the message that
	// carries it; it goes first, then that message and what follows.
	start := 0
	if o.replay {
		if at, cp := latestCheckpoint(req.Messages, req.Model); at >= 0 {
			w.Input = append(w.Input, cp)
			start = at
		}
	}
	for i, m := range req.Messages {
		if i < start && m.Role != llm.RoleSystem {
			continue
		}
		w.Input = appendRsItems(w.Input, m, o.replay && i > boundary, req.Model)
	}
	for _, t := range req.Tools {
		params, err := toolParams(t)
		if err != nil {
			return nil, err
		}
		w.Tools = append(w.Tools, rsTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: params})
	}
	return encodeBody(w)
}

// appendRsItems appends the input items of one message. replay says the
// message is after the last user message, so its reasoning items of this
// format and model go back before its output.
func appendRsItems(items []any, m llm.Message, replay bool, model string) []any {
	switch m.Role {
	case llm.RoleSystem:
		if t := m.Text(); t != "" {
			items = append(items, rsMessage{Type: "message", Role: "developer", Content: t})
		}
	case llm.RoleUser:
		items = append(items, rsMessage{Type: "message", Role: "user", Content: userContent(m.Content,
			// Blank text is dropped.
			func(t string) (rsPart, bool) { return rsPart{Type: "input_text", Text: t}, strings.TrimSpace(t) != "" },
			func(u string) rsPart { return rsPart{Type: "input_image", ImageURL: u} })})
	case llm.RoleAssistant:
		text := m.Text()
		if replay && (text != "" || len(m.ToolCalls) > 0) && m.Reasoning.IssuedBy(ResponsesAPI, model) {
			for _, it := range m.Reasoning.Items {
				if itemType(it) != "compaction" {
					items = append(items, it)
				}
			}
		}
		if text != "" {
			items = append(items, rsMessage{Type: "message", Role: "assistant", Content: []rsPart{{Type: "output_text", Text: text}}})
		}
		for _, c := range m.ToolCalls {
			items = append(items, rsFunctionCall{Type: "function_call", CallID: c.ID, Name: c.Name, Arguments: wireArguments(c.Arguments)})
		}
	case llm.RoleTool:
		items = append(items, rsFunctionOutput{Type: "function_call_output", CallID: m.ToolCallID, Output: m.Text()})
	}
	return items
}
