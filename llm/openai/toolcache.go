package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/talaria-agent/talaria/llm"
)

// toolCache keeps the validated, encoded tool list of the last request, so
// a provider checks and encodes each tool schema once, not on every call
// (the list only changes when the registry does). Safe for concurrent use.
type toolCache struct {
	mu    sync.Mutex
	specs []llm.ToolSpec // a private copy of the list encoded
	enc   []byte         // `,"tools":[…]`, or nothing for no tools
}

// encoded returns the tools member of the request body for specs, as the
// full encoder writes it after the messages; wire builds one tool's wire
// value from its spec and checked parameters (a cache serves one format).
func (c *toolCache) encoded(specs []llm.ToolSpec, wire func(llm.ToolSpec, json.RawMessage) any) ([]byte, error) {
	if c != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		if sameSpecs(c.specs, specs) && (c.enc != nil || len(specs) == 0) {
			return c.enc, nil
		}
	}
	if len(specs) == 0 {
		return nil, nil
	}
	tools := make([]any, 0, len(specs))
	for _, t := range specs {
		params, err := toolParams(t)
		if err != nil {
			return nil, err
		}
		tools = append(tools, wire(t, params))
	}
	var buf bytes.Buffer
	buf.WriteString(`,"tools":`)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(tools); err != nil {
		return nil, fmt.Errorf("encoding request: %w", err)
	}
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if c != nil {
		c.specs = make([]llm.ToolSpec, len(specs))
		for i, t := range specs {
			c.specs[i] = llm.ToolSpec{Name: t.Name, Description: t.Description, Parameters: bytes.Clone(t.Parameters)}
		}
		c.enc = out
	}
	return out, nil
}

func sameSpecs(a, b []llm.ToolSpec) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Description != b[i].Description || !bytes.Equal(a[i].Parameters, b[i].Parameters) {
			return false
		}
	}
	return true
}

// chatTool is a Chat Completions tool for toolCache.encoded.
func chatTool(t llm.ToolSpec, params json.RawMessage) any {
	return wireTool{Type: "function", Function: wireFunction{Name: t.Name, Description: t.Description, Parameters: params}}
}

// responsesTool is a Responses tool for toolCache.encoded.
func responsesTool(t llm.ToolSpec, params json.RawMessage) any {
	return rsTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: params}
}
