// Package mcptest is a real MCP server, built with the official Go SDK, for
// tests of Talaria's MCP client: read-only and mutating tools, a slow tool
// that records cancellation, tools that crash the server or write garbage
// on its stdout, image, resource-link and structured results, an error
// result, names that need sanitising or collide, schemas providers reject,
// and a tool that changes the tool list. Its command, mcptestserver, serves
// it over stdio or streamable HTTP.
package mcptest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// DirEnv names the directory the server writes notes and cancellation
// markers into.
const DirEnv = "MCPTEST_DIR"

// TokenEnv is echoed by the "token" tool, to test ${VAR} expansion.
const TokenEnv = "MCPTEST_TOKEN"

// PNG is a 1×1 PNG the "render" tool returns.
var PNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

// LongName is a tool name longer than the 64 bytes providers accept.
const LongName = "a_tool_name_that_is_much_longer_than_any_provider_accepts_for_functions"

// Server is the test server; NewServer builds it.
type Server struct {
	*sdk.Server
	dir   string
	calls atomic.Int64
	added atomic.Bool
	stdio bool
}

func obj(props string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	if len(required) == 0 {
		req = []byte("[]")
	}
	return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":` + string(req) + `}`)
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

func args(req *sdk.CallToolRequest) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(req.Params.Arguments, &m)
	return m
}

// NewServer builds the server. stdio says whether it talks over stdio
// (the garbage tool needs the stdout).
func NewServer(stdio bool) *Server {
	s := &Server{dir: os.Getenv(DirEnv), stdio: stdio}
	s.Server = sdk.NewServer(&sdk.Implementation{Name: "mcptest", Version: "1.0"}, &sdk.ServerOptions{
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true}},
	})
	ro := &sdk.ToolAnnotations{ReadOnlyHint: true}
	add := func(name, desc string, schema json.RawMessage, ann *sdk.ToolAnnotations, h sdk.ToolHandler) {
		s.AddTool(&sdk.Tool{Name: name, Description: desc, InputSchema: schema, Annotations: ann}, h)
	}
	add("echo", "Echo the text back.", obj(`"text":{"type":"string"}`, "text"), ro,
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text(fmt.Sprint("echo: ", args(req)["text"])), nil
		})
	type sumIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	type sumOut struct {
		Sum int `json:"sum"`
	}
	sdk.AddTool(s.Server, &sdk.Tool{Name: "add", Description: "Add two integers.", Annotations: ro},
		func(_ context.Context, _ *sdk.CallToolRequest, in sumIn) (*sdk.CallToolResult, sumOut, error) {
			return nil, sumOut{Sum: in.A + in.B}, nil
		})
	add("inventory", "Count the items in stock.", obj(""), ro,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			r := text("3 items in stock")
			r.StructuredContent = map[string]any{"count": 3, "items": []string{"bolts", "nuts", "washers"}}
			return r, nil
		})
	add("write_note", "Save a note to a file.", obj(`"name":{"type":"string"},"text":{"type":"string"}`, "name", "text"), nil,
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			a := args(req)
			name := filepath.Base(fmt.Sprint(a["name"]))
			if err := os.WriteFile(filepath.Join(s.dir, "note-"+name), []byte(fmt.Sprint(a["text"])), 0o644); err != nil {
				return nil, err
			}
			return text("saved note " + name), nil
		})
	add("slow", "Wait ms milliseconds, then answer.", obj(`"ms":{"type":"integer"}`, "ms"), ro,
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			ms, _ := args(req)["ms"].(float64)
			n := s.calls.Add(1)
			s.marker(fmt.Sprintf("started-%d", n), strconv.Itoa(os.Getpid()))
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
				return text(fmt.Sprintf("waited %dms", int(ms))), nil
			case <-ctx.Done():
				// The client's notifications/cancelled arrived.
				s.marker(fmt.Sprintf("cancelled-%d", n), "")
				return nil, ctx.Err()
			}
		})
	add("crash", "Crash the server.", obj(""), nil,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "mcptest: crashing on purpose")
			os.Exit(3)
			return nil, nil
		})
	add("garbage", "Write garbage where the protocol goes.", obj(""), ro,
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if s.stdio {
				fmt.Fprintln(os.Stdout, "this is not JSON-RPC {{{")
			}
			<-ctx.Done()
			return nil, ctx.Err()
		})
	add("render", "Render a picture.", obj(""), ro,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "rendered"},
				&sdk.ImageContent{Data: PNG, MIMEType: "image/png"},
				&sdk.ResourceLink{URI: "file:///tmp/picture.png", Name: "picture.png", MIMEType: "image/png"},
			}}, nil
		})
	add("fail", "Look up a record that does not exist.", obj(""), ro,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			r := text("record 42 not found")
			r.IsError = true
			return r, nil
		})
	add("pid", "Report the server's process id.", obj(""), ro,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text(strconv.Itoa(os.Getpid())), nil
		})
	add("token", "Report the token the server was started with.", obj(""), ro,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text("token=" + os.Getenv(TokenEnv)), nil
		})
	add("spawn", "Start a helper process that sleeps; report its pid.", obj(""), nil,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			cmd := exec.Command("sleep", "300")
			if err := cmd.Start(); err != nil {
				return nil, err
			}
			go func() { _ = cmd.Wait() }()
			return text(strconv.Itoa(cmd.Process.Pid)), nil
		})
	// Names that need sanitising and collide once sanitised.
	add("read.file", "Read a file (dotted name).", obj(""), ro,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("dotted"), nil })
	add("read_file", "Read a file.", obj(""), ro,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text("underscored"), nil
		})
	add(LongName, "A tool with a long name.", obj(""), ro,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("long"), nil })
	// Schemas: one providers reject that can be fixed, one that cannot.
	add("tag", "Tag things.", json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"tags":{"type":"array"}},"required":["tags","ghost"]}`), nil,
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text(fmt.Sprint("tagged ", args(req)["tags"])), nil
		})
	add("bad_schema", "Its schema uses a type no provider knows.", json.RawMessage(`{"type":"object","properties":{"x":{"type":"frobnicate"}}}`), ro,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text("never offered"), nil
		})
	add("add_tool", "Add the tool 'late' to this server.", obj(""), nil,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if s.added.CompareAndSwap(false, true) {
				add("late", "A tool added while running.", obj(""), ro,
					func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("late"), nil })
			}
			return text("added"), nil
		})
	return s
}

// marker writes a file tests wait for; the rename makes it appear with
// its content, never empty.
func (s *Server) marker(name, content string) {
	tmp := filepath.Join(s.dir, "."+name+".tmp")
	if os.WriteFile(tmp, []byte(content), 0o644) == nil {
		_ = os.Rename(tmp, filepath.Join(s.dir, name))
	}
}

// ToolNames are the names the server starts with, for tests.
func ToolNames() []string {
	return strings.Fields("add add_tool bad_schema crash echo fail garbage inventory pid read.file read_file render slow spawn tag token write_note " + LongName)
}
