package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"

	"google.golang.org/genai"

	"github.com/talaria-agent/talaria/llm"
)

// sdkBuildRequest is the adapter's request as it was built for the genai
// SDK before the adapter encoded its own bodies (kept verbatim as the
// reference the encoder is checked against): it projects req onto Gemini
// contents and a config. Consecutive user and tool messages become one
// user turn, function responses first, in the order of the calls they
// answer (Gemini matches them by name and position); assistant messages
// become model turns with their signatures.
func sdkBuildRequest(req *llm.Request, budget int) ([]*genai.Content, *genai.GenerateContentConfig, error) {
	off := false
	cfg := &genai.GenerateContentConfig{AutomaticContinuation: &off}
	var system []*genai.Part
	if req.System != "" {
		system = append(system, &genai.Part{Text: req.System})
	}
	if req.MaxTokens > 0 {
		cfg.MaxOutputTokens = int32(req.MaxTokens)
	}
	if t := req.Temperature; t != nil {
		f := float32(*t)
		cfg.Temperature = &f
	}
	if budget > 0 {
		b := int32(budget)
		cfg.ThinkingConfig = &genai.ThinkingConfig{IncludeThoughts: true, ThinkingBudget: &b}
	}
	if len(req.Tools) > 0 {
		decls := make([]*genai.FunctionDeclaration, 0, len(req.Tools))
		for _, t := range req.Tools {
			params := json.RawMessage(bytes.TrimSpace(t.Parameters))
			switch {
			case len(params) == 0 || string(params) == "null":
				params = json.RawMessage(`{"type":"object","properties":{}}`)
			case !json.Valid(params):
				return nil, nil, fmt.Errorf("%w: tool %q: parameters are not valid JSON", errInvalid, t.Name)
			}
			decls = append(decls, &genai.FunctionDeclaration{Name: t.Name, Description: t.Description, ParametersJsonSchema: params})
		}
		cfg.Tools = []*genai.Tool{{FunctionDeclarations: decls}}
	}

	var contents []*genai.Content
	var responses, others []*genai.Part
	var lastCalls []llm.ToolCall
	flushUser := func() {
		if len(responses)+len(others) > 0 {
			parts := append(sdkOrderResponses(responses, lastCalls), others...)
			contents = append(contents, &genai.Content{Role: genai.RoleUser, Parts: parts})
		}
		responses, others = nil, nil
	}
	names := map[string]string{} // call id → tool name
	for _, m := range req.Messages {
		switch m.Role {
		case llm.RoleSystem:
			if t := m.Text(); t != "" {
				system = append(system, &genai.Part{Text: t})
			}
		case llm.RoleUser:
			others = append(others, sdkUserParts(m.Content)...)
		case llm.RoleTool:
			name := m.ToolName
			if name == "" {
				name = names[m.ToolCallID]
			}
			key := "output"
			if m.IsError {
				key = "error"
			}
			responses = append(responses, &genai.Part{FunctionResponse: &genai.FunctionResponse{
				ID: m.ToolCallID, Name: name, Response: map[string]any{key: m.Text()},
			}})
		case llm.RoleAssistant:
			flushUser()
			for _, c := range m.ToolCalls {
				names[c.ID] = c.Name
			}
			lastCalls = m.ToolCalls
			if parts := sdkModelParts(m, req.Model); len(parts) > 0 {
				contents = append(contents, &genai.Content{Role: genai.RoleModel, Parts: parts})
			}
		}
	}
	flushUser()
	if len(system) > 0 {
		cfg.SystemInstruction = &genai.Content{Parts: system}
	}
	return contents, cfg, nil
}

// orderResponses puts function responses in the order of the calls they
// answer (tools may finish, and be stored, in another order); responses
// for unknown calls keep their place at the end.
func sdkOrderResponses(parts []*genai.Part, calls []llm.ToolCall) []*genai.Part {
	out := make([]*genai.Part, 0, len(parts))
	used := make([]bool, len(parts))
	for _, c := range calls {
		for j, p := range parts {
			if !used[j] && p.FunctionResponse.ID == c.ID {
				out = append(out, p)
				used[j] = true
				break
			}
		}
	}
	for j, p := range parts {
		if !used[j] {
			out = append(out, p)
		}
	}
	// Talaria's call ids are not Gemini's: the wire matches by name and
	// order, so the ids are not sent.
	for i, p := range out {
		fr := *p.FunctionResponse
		fr.ID = ""
		out[i] = &genai.Part{FunctionResponse: &fr}
	}
	return out
}

// modelParts replays an assistant message: text, then function calls, each
// with the signature it was issued with when Gemini issued it for this
// model. A call turn without one gets the skip value; the API requires it
// only in the current turn, but sending it on every such turn keeps the
// bytes of a turn the same before and after the next user message, so the
// prompt cache prefix survives.
func sdkModelParts(m llm.Message, model string) []*genai.Part {
	var parts []*genai.Part
	var textPart *genai.Part
	if t := m.Text(); t != "" {
		textPart = &genai.Part{Text: t}
		parts = append(parts, textPart)
	}
	calls := make([]*genai.Part, 0, len(m.ToolCalls))
	for _, c := range m.ToolCalls {
		var args map[string]any
		if json.Unmarshal(c.ArgumentsJSON(), &args) != nil || args == nil {
			args = map[string]any{}
		}
		p := &genai.Part{FunctionCall: &genai.FunctionCall{Name: c.Name, Args: args}}
		calls = append(calls, p)
		parts = append(parts, p)
	}
	if r := m.Reasoning; r.IssuedBy(API, model) {
		for _, raw := range r.Items {
			var ref sigRef
			if json.Unmarshal(raw, &ref) != nil {
				continue
			}
			switch {
			case ref.On == "call" && ref.Index < len(calls):
				calls[ref.Index].ThoughtSignature = ref.Signature
			case ref.On == "text" && textPart != nil:
				textPart.ThoughtSignature = ref.Signature
			}
		}
	}
	if len(calls) > 0 && calls[0].ThoughtSignature == nil {
		calls[0].ThoughtSignature = skipSignature
	}
	return parts
}

// userParts maps user content; empty text is dropped (the API rejects it).
func sdkUserParts(content []llm.Part) []*genai.Part {
	var out []*genai.Part
	for _, p := range content {
		switch p.Type {
		case llm.PartText:
			if p.Text != "" {
				out = append(out, &genai.Part{Text: p.Text})
			}
		case llm.PartImage:
			switch {
			case len(p.Data) > 0:
				mt := p.MediaType
				if mt == "" {
					mt = "image/png"
				}
				out = append(out, &genai.Part{InlineData: &genai.Blob{MIMEType: mt, Data: p.Data}})
			case p.URL != "":
				out = append(out, &genai.Part{FileData: &genai.FileData{FileURI: p.URL}})
			}
		}
	}
	return out
}
