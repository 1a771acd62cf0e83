package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Messages after the real API's wording.
const (
	anEmptyContent = "messages.%d: all messages must have non-empty content except for the optional final assistant message"
	anEmptyText    = "messages: text content blocks must be non-empty"
	anOrphanResult = "messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. " +
		"Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
	anUnanswered = "messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. " +
		"Each `tool_use` block must have a corresponding `tool_result` block in the next message."
	anAlternation = "messages: roles must alternate between \"user\" and \"assistant\", but found multiple %q roles in a row"
)

type anBody struct {
	Model     string          `json:"model"`
	MaxTokens *int            `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Messages  json.RawMessage `json:"messages"`
	Tools     []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Stream   bool `json:"stream"`
	Thinking *struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	} `json:"thinking"`
}

type anMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type anBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	Thinking  string          `json:"thinking"`
	Signature *string         `json:"signature"`
	Data      string          `json:"data"`
}

// parseAnthropic fills req from its Body and returns the first rule the
// request breaks, or nil.
func parseAnthropic(req *Request) *ErrorReply {
	var v *ErrorReply
	bad := func(msg string) {
		if v == nil {
			v = &ErrorReply{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: msg}
		}
	}
	if !validUTF8(req.Body) {
		bad("The request body is not valid UTF-8")
		return v
	}
	var b anBody
	if err := json.Unmarshal(req.Body, &b); err != nil {
		if !isTypeError(err) {
			bad(fmt.Sprintf("There was an issue with the format of your request: invalid JSON: %v", err))
			return v
		}
		bad(fmt.Sprintf("Input has the wrong type: %v", err))
	}
	req.Model = b.Model
	req.Stream = b.Stream
	if b.MaxTokens != nil {
		req.MaxTokens = *b.MaxTokens
	}
	for _, t := range b.Tools {
		req.Tools = append(req.Tools, t.Name)
	}
	system, err := anSystem(b.System)
	req.System = system
	if err != nil {
		bad(err.Error())
	}
	if b.Model == "" {
		bad("model: Field required")
	}
	if b.MaxTokens == nil {
		bad("max_tokens: Field required")
	}
	thinking := false
	if t := b.Thinking; t != nil && t.Type == "enabled" {
		thinking = true
		req.ThinkingBudget = t.BudgetTokens
		switch {
		case t.BudgetTokens < 1024:
			bad("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
		case b.MaxTokens != nil && *b.MaxTokens <= t.BudgetTokens:
			bad("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size")
		}
	}
	if isAbsent(b.Messages) {
		bad("messages: Field required")
		return v
	}
	var msgs []anMessage
	if err := json.Unmarshal(b.Messages, &msgs); err != nil {
		bad(fmt.Sprintf("messages: Input should be a valid list: %v", err))
		return v
	}
	if len(msgs) == 0 {
		bad("messages: at least one message is required")
		return v
	}
	if e := normalizeAnthropic(req, msgs, thinking); e != nil {
		bad(e.Message)
	}
	ttls, broken := anCacheMarks(req.Body)
	req.CacheTTLs = ttls
	if broken != "" {
		bad(broken)
	}
	return v
}

// anSystem reads "system": a string or a list of text blocks.
func anSystem(raw json.RawMessage) (string, error) {
	if isAbsent(raw) {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("system: %w", err)
		}
		return s, nil
	}
	var blocks []anBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", fmt.Errorf("system: Input should be a valid string or a list of text blocks: %w", err)
	}
	parts := make([]string, 0, len(blocks))
	for _, bl := range blocks {
		if bl.Text == nil || *bl.Text == "" {
			return strings.Join(parts, "\n"), fmt.Errorf("system: text content blocks must be non-empty")
		}
		parts = append(parts, *bl.Text)
	}
	return strings.Join(parts, "\n"), nil
}

// normalizeAnthropic builds req.Messages and checks the transcript rules;
// it returns the first broken rule.
func normalizeAnthropic(req *Request, msgs []anMessage, thinking bool) *ErrorReply {
	var first *ErrorReply
	keep := func(format string, a ...any) {
		if first == nil {
			first = &ErrorReply{Message: fmt.Sprintf(format, a...)}
		}
	}
	seen := map[string]bool{}
	// prevCalls are the tool_use ids of the previous message when it was an
	// assistant message; tool_result blocks may answer only those.
	var prevCalls []string
	prevAt := -1
	lastAssistant := -1
	for i, m := range msgs {
		if m.Role == "assistant" {
			lastAssistant = i
		}
	}
	for i, m := range msgs {
		switch {
		case m.Role == "system":
			keep("messages: Unexpected role \"system\". The Messages API accepts a top-level `system` parameter, not \"system\" as an input message role.")
		case m.Role != "user" && m.Role != "assistant":
			keep("messages.%d.role: Input should be 'user' or 'assistant'", i)
		case i == 0 && m.Role != "user":
			keep("messages: first message must use the \"user\" role")
		case i > 0 && m.Role == msgs[i-1].Role:
			keep(anAlternation, m.Role)
		}
		blocks, err := anBlocks(m.Content)
		if err != nil {
			keep("messages.%d.content: %v", i, err)
		}
		if len(blocks) == 0 && err == nil {
			keep(anEmptyContent, i)
		}
		answered := map[string]bool{}
		var calls []string
		out := anMessageView(m.Role, blocks)
		for k, bl := range blocks {
			switch bl.Type {
			case "text":
				if bl.Text == nil || *bl.Text == "" {
					keep(anEmptyText)
				}
			case "tool_use":
				if m.Role != "assistant" {
					keep("messages.%d.content.%d: `tool_use` blocks can only be in `assistant` messages", i, k)
				}
				if seen[bl.ID] {
					keep("messages.%d.content.%d: `tool_use` ids must be unique", i, k)
				}
				seen[bl.ID] = true
				calls = append(calls, bl.ID)
			case "thinking", "redacted_thinking":
				if m.Role != "assistant" {
					keep("messages.%d.content.%d: `%s` blocks can only be in `assistant` messages", i, k, bl.Type)
				}
				if !anThinkingIntact(bl) {
					if i == lastAssistant {
						keep(anThinkingModified, i, k)
					} else {
						keep("messages.%d.content.%d: Invalid `signature` in `thinking` block", i, k)
					}
				}
			case "tool_result":
				if m.Role != "user" {
					keep("messages.%d.content.%d: `tool_result` blocks can only be in `user` messages", i, k)
				}
				if !slices.Contains(prevCalls, bl.ToolUseID) || answered[bl.ToolUseID] {
					keep(anOrphanResult, i, k, bl.ToolUseID)
				}
				answered[bl.ToolUseID] = true
				if _, err := anResultText(bl.Content); err != nil {
					keep("messages.%d.content.%d.content: %v", i, k, err)
				}
			}
		}
		if prevAt >= 0 {
			anCheckAnswered(prevAt, prevCalls, answered, m.Role, keep)
		}
		req.Messages = append(req.Messages, out...)
		prevCalls, prevAt = nil, -1
		if m.Role == "assistant" && len(calls) > 0 {
			prevCalls, prevAt = calls, i
		}
	}
	if prevAt >= 0 {
		anCheckAnswered(prevAt, prevCalls, nil, "", keep)
	}
	if thinking {
		anCheckThinkingLead(msgs, lastAssistant, keep)
	}
	return first
}

// anThinkingModified is the real API's answer to an edited thinking block
// in the latest assistant message.
const anThinkingModified = "messages.%d.content.%d: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified. These blocks must remain as they were in the original response."

// anThinkingIntact reports whether a replayed thinking block still carries
// the signature this server issued for its exact text.
func anThinkingIntact(bl anBlock) bool {
	if bl.Type == "redacted_thinking" {
		return strings.HasPrefix(bl.Data, redactedPrefix)
	}
	return bl.Signature != nil && anVerifySignature(*bl.Signature, bl.Thinking)
}

// redactedPrefix starts every redacted_thinking payload this server sends.
const redactedPrefix = "fakellm-redacted:"

// anCheckThinkingLead enforces the extended-thinking rule of a tool loop:
// with thinking enabled, when the conversation ends in tool results, the
// assistant message that called the tools must start with a thinking block.
func anCheckThinkingLead(msgs []anMessage, lastAssistant int, keep func(string, ...any)) {
	if lastAssistant < 0 || lastAssistant != len(msgs)-2 {
		return
	}
	blocks, err := anBlocks(msgs[lastAssistant].Content)
	if err != nil || len(blocks) == 0 {
		return
	}
	hasCalls := false
	for _, bl := range blocks {
		hasCalls = hasCalls || bl.Type == "tool_use"
	}
	if !hasCalls || blocks[0].Type == "thinking" || blocks[0].Type == "redacted_thinking" {
		return
	}
	keep("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking", lastAssistant, blocks[0].Type)
}

// anCheckAnswered reports the calls of message at that the next message
// (of role next, "" when there is none) did not answer.
func anCheckAnswered(at int, calls []string, answered map[string]bool, next string, keep func(string, ...any)) {
	var missing []string
	for _, id := range calls {
		if next != "user" || !answered[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		keep(anUnanswered, at, strings.Join(missing, ", "))
	}
}

// anBlocks reads a message's content: a string (one text block) or a list
// of blocks.
func anBlocks(raw json.RawMessage) ([]anBlock, error) {
	if isAbsent(raw) {
		return nil, fmt.Errorf("Field required")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		if s == "" {
			return nil, nil
		}
		return []anBlock{{Type: "text", Text: &s}}, nil
	}
	var blocks []anBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, fmt.Errorf("Input should be a valid string or list of content blocks: %w", err)
	}
	return blocks, nil
}

// anResultText reads a tool_result's content: absent, a string, or a list
// of blocks whose text blocks must be non-empty.
func anResultText(raw json.RawMessage) (string, error) {
	if isAbsent(raw) {
		return "", nil
	}
	badList := func(err error) error {
		return fmt.Errorf("Input should be a valid string or list of content blocks: %w", err)
	}
	return joinText(raw, badList, func(bl anBlock) (string, error) {
		if bl.Type != "text" {
			return "", nil
		}
		if bl.Text == nil || *bl.Text == "" {
			return "", fmt.Errorf("text content blocks must be non-empty")
		}
		return *bl.Text, nil
	})
}

// anMessageView turns one Anthropic message into normalized entries:
// assistant messages map one to one; in user messages every tool_result
// becomes a "tool" entry and runs of other blocks become "user" entries.
func anMessageView(role string, blocks []anBlock) []Msg {
	if role != "user" {
		m := Msg{Role: role}
		for _, bl := range blocks {
			switch bl.Type {
			case "text":
				if bl.Text != nil {
					m.Text += *bl.Text
				}
			case "thinking":
				m.Reasoning += bl.Thinking
				if bl.Signature != nil {
					m.Signatures = append(m.Signatures, *bl.Signature)
				}
			case "redacted_thinking":
				m.Signatures = append(m.Signatures, bl.Data)
			case "tool_use":
				args := ""
				if !isAbsent(bl.Input) {
					args = string(bl.Input)
				}
				m.ToolCalls = append(m.ToolCalls, Call{ID: bl.ID, Name: bl.Name, Arguments: args})
			}
		}
		return []Msg{m}
	}
	var out []Msg
	var user *Msg
	for _, bl := range blocks {
		if bl.Type == "tool_result" {
			if user != nil {
				out = append(out, *user)
				user = nil
			}
			text, _ := anResultText(bl.Content)
			out = append(out, Msg{Role: "tool", Text: text, ToolCallID: bl.ToolUseID, IsError: bl.IsError})
			continue
		}
		if user == nil {
			user = &Msg{Role: "user"}
		}
		if bl.Type == "text" && bl.Text != nil {
			user.Text += *bl.Text
		}
	}
	if user != nil || len(out) == 0 {
		if user == nil {
			user = &Msg{Role: "user"}
		}
		out = append(out, *user)
	}
	return out
}
