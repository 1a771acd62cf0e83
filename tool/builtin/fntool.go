package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/talaria-agent/talaria/tool"
)

// fnTool adapts a run function to tool.Tool and applies what every built-in
// shares: failures become error results (never a Go error or a panic), and
// output is valid UTF-8 capped at MaxOutput.
type fnTool struct {
	info      tool.Info
	maxOutput int
	run       func(ctx context.Context, args json.RawMessage) tool.Result
	// file names the file a call changes (tool.FileChanger); nil for
	// tools that change no single file.
	file func(args json.RawMessage) (string, bool)
}

// ChangedFile implements tool.FileChanger for write_file and edit_file.
func (t *fnTool) ChangedFile(args json.RawMessage) (string, bool) {
	if t.file == nil {
		return "", false
	}
	return t.file(args)
}

// withChangedFile makes t name the workspace file its "path" argument
// resolves to (tool.FileChanger).
func withChangedFile(opt Options, t tool.Tool) tool.Tool {
	ws := workspace{root: opt.withDefaults().Root}
	t.(*fnTool).file = func(raw json.RawMessage) (string, bool) {
		var a struct {
			Path string `json:"path"`
		}
		if json.Unmarshal(raw, &a) != nil {
			return "", false
		}
		tg, err := ws.resolve(a.Path)
		if err != nil {
			return "", false
		}
		return tg.real, true
	}
	return t
}

// newTool builds a built-in whose run takes its decoded arguments A: what
// every constructor shares (the workspace at opt.Root, the output cap,
// arguments that do not decode become an error result). It applies opt's
// defaults; a constructor whose info or run reads opt applies them first too
// (withDefaults is idempotent).
func newTool[A any](opt Options, info tool.Info, run func(ctx context.Context, ws workspace, a A) tool.Result) tool.Tool {
	opt = opt.withDefaults()
	ws := workspace{root: opt.Root}
	return &fnTool{info: info, maxOutput: opt.MaxOutput, run: func(ctx context.Context, raw json.RawMessage) tool.Result {
		var a A
		if err := decodeArgs(raw, &a); err != nil {
			return tool.Errorf("%v", err)
		}
		return run(ctx, ws, a)
	}}
}

func (t *fnTool) Info() tool.Info { return t.info }

func (t *fnTool) Run(ctx context.Context, args json.RawMessage) (res tool.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			res = tool.Errorf("internal error in %s: %v", t.info.Name, p)
		}
		res.Content = capText(strings.ToValidUTF8(res.Content, "\uFFFD"), t.maxOutput)
	}()
	if err := ctx.Err(); err != nil {
		return tool.Errorf("interrupted before %s started", t.info.Name), nil
	}
	return t.run(ctx, args), nil
}

// decodeArgs unmarshals arguments; tools may be called without the
// registry's validation (embedders), so a bad shape is an error result.
func decodeArgs(args json.RawMessage, dst any) error {
	if len(strings.TrimSpace(string(args))) == 0 {
		args = json.RawMessage("{}")
	}
	if err := json.Unmarshal(args, dst); err != nil {
		return fmt.Errorf("invalid arguments: %w", err)
	}
	return nil
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
