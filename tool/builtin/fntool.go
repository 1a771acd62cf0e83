package builtin

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/talaria-agent/talaria/tool"
)

// changedFile makes a built-in name the workspace file its "path" argument
// resolves to (tool.FileChanger), for the tool ledger's content hashes.
type changedFile struct {
	tool.Tool
	ws workspace
}

// ChangedFile implements tool.FileChanger for write_file and edit_file.
func (t changedFile) ChangedFile(raw json.RawMessage) (string, bool) {
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(raw, &a) != nil {
		return "", false
	}
	tg, err := t.ws.resolve(a.Path)
	if err != nil {
		return "", false
	}
	return tg.real, true
}

func withChangedFile(opt Options, t tool.Tool) tool.Tool {
	return changedFile{Tool: t, ws: workspace{root: opt.withDefaults().Root}}
}

// newTool builds a built-in as a tool.Func whose arguments decode into A:
// validated against info's literal schema (kept literal so the bytes sent to
// the provider never vary), a panic becomes an error result, and output is
// valid UTF-8 capped at MaxOutput. Built-ins never return a Go error: wrong
// arguments (an embedder calling Run directly) are an error result too. It applies opt's defaults; a constructor
// whose info or run reads opt applies them first too (withDefaults is
// idempotent).
func newTool[A any](opt Options, info tool.Info, run func(ctx context.Context, ws workspace, a A) tool.Result) tool.Tool {
	opt = opt.withDefaults()
	ws := workspace{root: opt.Root}
	t, err := tool.FuncOf(info, func(ctx context.Context, a A) (tool.Result, error) {
		res := run(ctx, ws, a)
		res.Content = capText(strings.ToValidUTF8(res.Content, "\uFFFD"), opt.MaxOutput)
		return res, nil
	})
	if err != nil {
		// The schemas are literals of this package: a bad one is a bug
		// that every test of the tool finds.
		panic("builtin: " + err.Error())
	}
	return resultsOnly{t}
}

// resultsOnly turns the errors of a tool.Func (wrong arguments) into error
// results, the built-ins' contract.
type resultsOnly struct{ tool.Tool }

func (t resultsOnly) Run(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	res, err := t.Tool.Run(ctx, args)
	if err != nil {
		return tool.Result{Content: err.Error(), IsError: true}, nil
	}
	return res, nil
}

// schema builds a compact object schema from property definitions; kept as
// literal JSON text so the bytes sent to the provider never vary.
func schema(props string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	if len(required) == 0 {
		req = []byte("[]")
	}
	return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":` + string(req) + `,"additionalProperties":false}`)
}
