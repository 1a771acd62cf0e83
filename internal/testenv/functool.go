package testenv

import (
	"context"
	"encoding/json"

	"github.com/talaria-agent/talaria/tool"
)

// FuncTool is a tool whose behaviour is a test's closure.
type FuncTool struct {
	Meta tool.Info
	Fn   func(ctx context.Context, args json.RawMessage) (tool.Result, error)
}

// Info implements tool.Tool.
func (f *FuncTool) Info() tool.Info { return f.Meta }

// Run implements tool.Tool.
func (f *FuncTool) Run(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	return f.Fn(ctx, args)
}

// ObjectSchema is a schema with the given properties JSON and required list.
func ObjectSchema(props string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	if len(required) == 0 {
		req = []byte("[]")
	}
	return json.RawMessage(`{"type":"object","properties":` + props + `,"required":` + string(req) + `}`)
}
