package fakellm

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// APIResponses names the OpenAI Responses route in Request.API.
const APIResponses = "openai-responses"

type rsBody struct {
	Model        string          `json:"model"`
	Instructions string          `json:"instructions"`
	Input        json.RawMessage `json:"input"`
	Tools        []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
	MaxOutputTokens   int      `json:"max_output_tokens"`
	Stream            bool     `json:"stream"`
	Store             *bool    `json:"store"`
	Include           []string `json:"include"`
	ContextManagement []struct {
		Type             string `json:"type"`
		CompactThreshold int    `json:"compact_threshold"`
	} `json:"context_management"`
}

// rsItem is one input item; which fields matter depends on Type.
type rsItem struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	CallID           string          `json:"call_id"`
	Name             string          `json:"name"`
	Arguments        *string         `json:"arguments"`
	Output           json.RawMessage `json:"output"`
	Summary          []rsSummary     `json:"summary"`
	EncryptedContent *string         `json:"encrypted_content"`
}

type rsSummary struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type rsPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL string `json:"image_url"`
}

// rsEncrypted is the opaque encrypted_content this server issues for a
// reasoning item: bound to the model, the item and its summary text, so a
// replay to another model or of edited bytes no longer verifies.
func rsEncrypted(epoch int, model, itemID, summary string) string {
	return base64.StdEncoding.EncodeToString([]byte(encPrefix + strconv.Itoa(epoch) + "\x00" + model + "\x00" + itemID + "\x00" + textDigest(summary)))
}

const encPrefix = "fakellm-encrypted-reasoning:"

// rsVerify reports whether enc was issued for model, item and summary.
func rsVerify(enc string, epoch int, model, itemID, summary string) bool {
	return enc == rsEncrypted(epoch, model, itemID, summary)
}

// parseResponses fills req from its Body and returns the first rule the
// request breaks, or nil.
func parseResponses(req *Request) *ErrorReply {
	var v *ErrorReply
	bad := func(code, msg string) {
		if v == nil {
			v = &ErrorReply{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: code, Message: msg}
		}
	}
	if !validUTF8(req.Body) {
		bad("", oaBadJSON)
		return v
	}
	var b rsBody
	if err := json.Unmarshal(req.Body, &b); err != nil {
		bad("", oaBadJSON)
		return v
	}
	req.Model, req.Stream, req.System, req.MaxTokens = b.Model, b.Stream, b.Instructions, b.MaxOutputTokens
	req.IncludeUsage = true
	for _, t := range b.Tools {
		req.Tools = append(req.Tools, t.Name)
	}
	if b.Model == "" {
		bad("", "Missing required parameter: 'model'.")
	}
	if isAbsent(b.Input) {
		bad("", "Missing required parameter: 'input'.")
		return v
	}
	var items []rsItem
	if b.Input[0] == '"' {
		var s string
		_ = json.Unmarshal(b.Input, &s)
		items = []rsItem{{Type: "message", Role: "user", Content: b.Input}}
	} else if err := json.Unmarshal(b.Input, &items); err != nil {
		bad("", fmt.Sprintf("Invalid type for 'input': expected a string or an array of input items: %v", err))
		return v
	}
	for _, cm := range b.ContextManagement {
		if cm.Type == "compaction" {
			req.CompactThreshold = cm.CompactThreshold
		}
	}
	if len(b.ContextManagement) > 0 && req.noContextManagement {
		if v == nil {
			v = &ErrorReply{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "unknown_parameter", Param: "context_management",
				Message: "Unknown parameter: 'context_management'."}
		}
	}
	stored := b.Store == nil || *b.Store
	if e := normalizeResponses(req, items, stored); e != nil {
		bad(e.Code, e.Message)
	}
	return v
}

// The item-rule refusals normalizeResponses gives, in the real Responses
// API's wording.
const (
	rsOrphanOutput = "No tool call found for function call output with call_id %s."
	rsUnanswered   = "No tool output found for function call %s."
	rsBadEncrypted = "The encrypted content for item %s could not be verified. Reason: Encrypted content could not be decrypted or parsed."
	rsNotPersisted = "Item with id '%s' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."
	rsNoFollower   = "Item '%s' of type 'reasoning' was provided without its required following item."
)

// normalizeResponses builds req.Messages and checks the item rules.
func normalizeResponses(req *Request, items []rsItem, stored bool) *ErrorReply {
	var first *ErrorReply
	keep := func(code, format string, a ...any) {
		if first == nil {
			first = &ErrorReply{Code: code, Message: fmt.Sprintf(format, a...)}
		}
	}
	calls := map[string]bool{}
	answered := map[string]bool{}
	var order []string
	// cur is the assistant entry being built from consecutive assistant-side
	// items (reasoning, assistant message, function calls).
	var cur *Msg
	flush := func() {
		if cur != nil {
			req.Messages = append(req.Messages, *cur)
			cur = nil
		}
	}
	asst := func() *Msg {
		if cur == nil {
			cur = &Msg{Role: "assistant"}
		}
		return cur
	}
	for i, it := range items {
		typ := it.Type
		if typ == "" && it.Role != "" {
			typ = "message"
		}
		switch typ {
		case "message":
			text, err := rsText(it.Content)
			if err != nil {
				keep("", "Invalid value for 'input[%d].content': %v", i, err)
			}
			switch it.Role {
			case "assistant":
				asst().Text += text
			case "user":
				flush()
				req.Messages = append(req.Messages, Msg{Role: "user", Text: text})
			case "system", "developer":
				flush()
				if req.System != "" {
					req.System += "\n"
				}
				req.System += text
			default:
				keep("", "Invalid value: '%s'. Supported values are: 'assistant', 'system', 'developer', and 'user'.", it.Role)
			}
		case "function_call":
			if calls[it.CallID] {
				keep("", "Duplicate item found with id %s. Remove the duplicate item from your input and try again.", it.CallID)
			}
			calls[it.CallID] = true
			order = append(order, it.CallID)
			args := ""
			if it.Arguments != nil {
				args = *it.Arguments
			}
			m := asst()
			m.ToolCalls = append(m.ToolCalls, Call{ID: it.CallID, Name: it.Name, Arguments: args})
		case "function_call_output":
			flush()
			if !calls[it.CallID] || answered[it.CallID] {
				keep("", rsOrphanOutput, it.CallID)
			}
			answered[it.CallID] = true
			out := rawString(it.Output)
			if out == "" && !isAbsent(it.Output) && it.Output[0] == '[' {
				out, _ = rsText(it.Output)
			}
			req.Messages = append(req.Messages, Msg{Role: "tool", Text: out, ToolCallID: it.CallID})
		case "compaction":
			if it.EncryptedContent == nil || !rsVerify(*it.EncryptedContent, req.epoch, req.Model, it.ID, "compaction") {
				keep("invalid_encrypted_content", rsBadEncrypted, it.ID)
			}
			req.Checkpoints = append(req.Checkpoints, it.ID)
		case "reasoning":
			summary := rsSummaryText(it.Summary)
			switch {
			case it.EncryptedContent == nil && !stored:
				keep("", rsNotPersisted, it.ID)
			case it.EncryptedContent != nil && !rsVerify(*it.EncryptedContent, req.epoch, req.Model, it.ID, summary):
				keep("invalid_encrypted_content", rsBadEncrypted, it.ID)
			}
			if i+1 >= len(items) || !rsFollows(items[i+1]) {
				keep("", rsNoFollower, it.ID)
			}
			req.ReasoningItems = append(req.ReasoningItems, it.ID)
			m := asst()
			m.Reasoning += summary
			if it.EncryptedContent != nil {
				m.Signatures = append(m.Signatures, *it.EncryptedContent)
			}
		default:
			keep("", "Invalid value: '%s'. Supported values are: 'message', 'function_call', 'function_call_output' and 'reasoning'.", typ)
		}
	}
	flush()
	for _, id := range order {
		if !answered[id] {
			keep("", rsUnanswered, id)
		}
	}
	return first
}

// rsFollows reports whether it may follow a reasoning item: the output the
// reasoning led to, or more reasoning.
func rsFollows(it rsItem) bool {
	switch it.Type {
	case "function_call", "reasoning", "compaction":
		return true
	case "message", "":
		return it.Role == "assistant"
	}
	return false
}

func rsSummaryText(s []rsSummary) string {
	parts := make([]string, 0, len(s))
	for _, p := range s {
		parts = append(parts, p.Text)
	}
	return strings.Join(parts, "\n\n")
}

// rsText reads message content: a string or a list of parts.
func rsText(raw json.RawMessage) (string, error) {
	if isAbsent(raw) {
		return "", fmt.Errorf("expected a string or an array of content parts, got null")
	}
	return joinText(raw, func(err error) error { return err }, func(p rsPart) (string, error) {
		switch p.Type {
		case "input_text", "output_text":
			return p.Text, nil
		case "input_image":
			return "", nil
		}
		return "", fmt.Errorf("unknown content part type '%s'", p.Type)
	})
}
