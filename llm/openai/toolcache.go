package openai

import (
	"encoding/json"
	"fmt"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/internal/toolcache"
	"github.com/talaria-agent/talaria/llm/internal/wire"
)

// encodedTools returns the tools member of the request body for specs
// (`,"tools":[…]`, or nothing for no tools), as the full encoder writes it
// after the messages, from tc (built once while the list does not change);
// toWire builds one tool's wire value from its spec and checked parameters
// (a cache serves one format).
func encodedTools(tc *toolcache.Cache, specs []llm.ToolSpec, toWire func(llm.ToolSpec, json.RawMessage) any) ([]byte, error) {
	return tc.Encoded(specs, func(specs []llm.ToolSpec) ([]byte, error) {
		if len(specs) == 0 {
			return nil, nil
		}
		tools := make([]any, 0, len(specs))
		for _, t := range specs {
			params, err := toolParams(t)
			if err != nil {
				return nil, err
			}
			tools = append(tools, toWire(t, params))
		}
		b, err := wire.MarshalJSON(tools)
		if err != nil {
			return nil, fmt.Errorf("encoding request: %w", err)
		}
		return append([]byte(`,"tools":`), b...), nil
	})
}

// chatTool is a Chat Completions tool for encodedTools.
func chatTool(t llm.ToolSpec, params json.RawMessage) any {
	return wireTool{Type: "function", Function: wireFunction{Name: t.Name, Description: t.Description, Parameters: params}}
}

// responsesTool is a Responses tool for encodedTools.
func responsesTool(t llm.ToolSpec, params json.RawMessage) any {
	return rsTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: params}
}
