package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The messages below follow the real API's wording, so classifiers and
// people reading test output meet what production would show them.
const (
	oaBadJSON = "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. " +
		"The OpenAI API expects a JSON payload, but what was sent was not valid JSON. " +
		"If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)"
	oaOrphanTool   = "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
	oaUnanswered   = "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s"
	oaInvalidRoles = "'system', 'assistant', 'user', 'function', 'tool', and 'developer'"
)

type oaBody struct {
	Model               string          `json:"model"`
	Messages            json.RawMessage `json:"messages"`
	Tools               []oaTool        `json:"tools"`
	MaxTokens           int             `json:"max_tokens"`
	MaxCompletionTokens int             `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type oaTool struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

type oaMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []oaToolCall    `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	Reasoning  json.RawMessage `json:"reasoning_content"`
}

type oaToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// parseOpenAI fills req from its Body and returns the first rule the request
// breaks, or nil. It fills as much as it can even when the request is bad,
// so the recording shows what was sent.
func parseOpenAI(req *Request) *ErrorReply {
	var v *ErrorReply
	bad := func(msg, param, code string) {
		if v == nil {
			v = &ErrorReply{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: msg, Param: param, Code: code}
		}
	}
	if !validUTF8(req.Body) {
		bad(oaBadJSON, "", "")
		return v
	}
	var b oaBody
	if err := json.Unmarshal(req.Body, &b); err != nil {
		if !isTypeError(err) {
			bad(oaBadJSON, "", "")
			return v
		}
		// A wrong type in one field still leaves the others decoded.
		bad(fmt.Sprintf("Invalid type in request body: %v", err), "", "invalid_type")
	}
	req.Model = b.Model
	req.Stream = b.Stream
	req.IncludeUsage = b.StreamOptions != nil && b.StreamOptions.IncludeUsage
	req.MaxTokens = b.MaxCompletionTokens
	if req.MaxTokens == 0 {
		req.MaxTokens = b.MaxTokens
	}
	for _, t := range b.Tools {
		req.Tools = append(req.Tools, t.Function.Name)
	}
	if b.Model == "" {
		bad("you must provide a model parameter", "", "")
	}
	if isAbsent(b.Messages) {
		bad("Missing required parameter: 'messages'.", "messages", "missing_required_parameter")
		return v
	}
	var msgs []oaMessage
	if err := json.Unmarshal(b.Messages, &msgs); err != nil {
		bad(fmt.Sprintf("Invalid type for 'messages': %v", err), "messages", "invalid_type")
		return v
	}
	if len(msgs) == 0 {
		bad("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", "messages", "empty_array")
		return v
	}
	if e := normalizeOpenAI(req, msgs); e != nil {
		bad(e.Message, e.Param, e.Code)
	}
	return v
}

// oaPairing tracks the tool calls of the newest assistant message, which
// tool messages must answer before any other message comes.
type oaPairing struct {
	at       int             // index of the assistant message; -1 when none is open
	order    []string        // its call ids, in order
	answered map[string]bool // call id -> answered
}

// close ends the open block; every call must have been answered.
func (p *oaPairing) close() *ErrorReply {
	if p.at < 0 {
		return nil
	}
	var missing []string
	for _, id := range p.order {
		if !p.answered[id] {
			missing = append(missing, id)
		}
	}
	at := p.at
	p.at, p.order, p.answered = -1, nil, nil
	if len(missing) == 0 {
		return nil
	}
	return &ErrorReply{Message: fmt.Sprintf(oaUnanswered, strings.Join(missing, ", ")), Param: fmt.Sprintf("messages.[%d].role", at)}
}

// normalizeOpenAI builds req.System and req.Messages and checks the
// transcript rules; it returns the first broken rule.
func normalizeOpenAI(req *Request, msgs []oaMessage) *ErrorReply {
	var first *ErrorReply
	keep := func(e *ErrorReply) {
		if first == nil && e != nil {
			first = e
		}
	}
	var system []string
	pair := oaPairing{at: -1}
	seen := map[string]bool{}
	for i, m := range msgs {
		text, present, err := oaContent(m.Content)
		if err != nil {
			keep(&ErrorReply{Message: fmt.Sprintf("Invalid type for 'messages.[%d].content': %v", i, err), Param: fmt.Sprintf("messages.[%d].content", i), Code: "invalid_type"})
		}
		switch m.Role {
		case "system", "developer":
			keep(pair.close())
			system = append(system, text)
		case "user", "function":
			keep(pair.close())
			req.Messages = append(req.Messages, Msg{Role: m.Role, Text: text})
		case "assistant":
			keep(pair.close())
			if !present && len(m.ToolCalls) == 0 {
				keep(&ErrorReply{Message: "Invalid value for 'content': expected a string, got null.", Param: fmt.Sprintf("messages.[%d].content", i)})
			}
			out := Msg{Role: "assistant", Text: text, Reasoning: rawString(m.Reasoning)}
			for j, c := range m.ToolCalls {
				out.ToolCalls = append(out.ToolCalls, Call{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
				switch {
				case c.ID == "":
					keep(&ErrorReply{Message: fmt.Sprintf("Missing required parameter: 'messages.[%d].tool_calls.[%d].id'.", i, j), Param: fmt.Sprintf("messages.[%d].tool_calls.[%d].id", i, j), Code: "missing_required_parameter"})
				case seen[c.ID]:
					keep(&ErrorReply{Message: fmt.Sprintf("Invalid 'messages.[%d].tool_calls.[%d].id': duplicate tool call id '%s'. Each tool call id must be unique within a request.", i, j, c.ID), Param: fmt.Sprintf("messages.[%d].tool_calls.[%d].id", i, j)})
				}
				seen[c.ID] = true
			}
			if len(m.ToolCalls) > 0 {
				pair.at, pair.answered = i, map[string]bool{}
				for _, c := range m.ToolCalls {
					pair.order = append(pair.order, c.ID)
				}
			}
			req.Messages = append(req.Messages, out)
		case "tool":
			req.Messages = append(req.Messages, Msg{Role: "tool", Text: text, ToolCallID: m.ToolCallID})
			known := false
			if pair.at >= 0 {
				for _, id := range pair.order {
					known = known || id == m.ToolCallID
				}
			}
			switch {
			case m.ToolCallID == "":
				keep(&ErrorReply{Message: fmt.Sprintf("Missing required parameter: 'messages.[%d].tool_call_id'.", i), Param: fmt.Sprintf("messages.[%d].tool_call_id", i), Code: "missing_required_parameter"})
			case !known || pair.answered[m.ToolCallID]:
				// A second answer to the same call is as much a transcript
				// bug as an orphan, so it gets the same rejection.
				keep(&ErrorReply{Message: oaOrphanTool, Param: fmt.Sprintf("messages.[%d].role", i)})
			default:
				pair.answered[m.ToolCallID] = true
			}
		default:
			keep(&ErrorReply{Message: fmt.Sprintf("Invalid value: '%s'. Supported values are: %s.", m.Role, oaInvalidRoles), Param: fmt.Sprintf("messages.[%d].role", i), Code: "invalid_value"})
		}
	}
	keep(pair.close())
	req.System = strings.Join(system, "\n")
	return first
}

// oaContent reads a message's content: a string, an array of parts, or
// null. present reports whether there is any content at all.
func oaContent(raw json.RawMessage) (text string, present bool, err error) {
	if isAbsent(raw) {
		return "", false, nil
	}
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &text); err != nil {
			return "", false, err
		}
		return text, text != "", nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", false, fmt.Errorf("expected a string or an array of content parts: %w", err)
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
			present = present || p.Text != ""
		} else {
			present = true
		}
	}
	return b.String(), present, nil
}
