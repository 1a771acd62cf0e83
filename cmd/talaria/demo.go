package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/config"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/anthropic"
	"github.com/talaria-agent/talaria/llm/gemini"
	"github.com/talaria-agent/talaria/llm/openai"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/sqlite"
	"github.com/talaria-agent/talaria/tool/builtin"
	"github.com/talaria-agent/talaria/turn"
)

var demoHelp = cmdHelp{
	name:  "demo",
	usage: "[flags]",
	about: `Starts the built-in scripted model server on 127.0.0.1, creates a small
workspace in a temporary directory, and runs one real turn against it: the
real wire format, real tools, a real SQLite database. No API key needed.
With --json the turn result is alone on stdout and the transcript goes to
stderr.`,
	examples: []string{
		"talaria demo",
		"talaria demo --api anthropic --keep",
		"talaria demo --api openai-responses",
		"talaria demo --json --latency 0s | jq .exit",
	},
}

// demoFiles is the workspace the demo works in.
var demoFiles = map[string]string{
	"README.md":     "# Shop inventory\n\nStock levels live in inventory.csv (item,quantity).\n",
	"inventory.csv": "item,quantity\nbolts,120\nnuts,3\nwashers,48\nhinges,2\nscrews,0\nbrackets,17\n",
	"notes.txt":     "TODO: list the items with fewer than 5 in stock in low_stock.md, so we can reorder them.\n",
}

func (c *cli) demoCmd(ctx context.Context, args []string) int {
	fs := demoHelp.flags()
	api := fs.String("api", "openai", "wire format the scripted server speaks: openai, openai-responses, anthropic or gemini")
	keep := fs.Bool("keep", false, "keep the temporary workspace and database")
	jsonOut := fs.Bool("json", false, "print the turn result as JSON at the end")
	latency := fs.Duration("latency", 150*time.Millisecond, "simulated model latency per reply")
	delegate := fs.Bool("delegate", false, "show delegation: two subagents work in parallel, then the agent combines their reports")
	if code, done := c.parseFlags(fs, demoHelp, args); done {
		return code
	}
	if !config.ValidAPI(*api) {
		return c.usageError(demoHelp, "--api %q: use one of %s", *api, config.APIChoice())
	}
	// With --json, stdout carries the JSON result alone.
	out := c.stdout
	if *jsonOut {
		out = c.stderr
	}
	ctx, stop := interruptible(ctx)
	defer stop()

	dir, err := os.MkdirTemp("", "talaria-demo-")
	if err != nil {
		return c.fail(exitOther, "create a temporary directory: %v", err)
	}
	if !*keep {
		defer os.RemoveAll(dir)
	}
	ws := filepath.Join(dir, "workspace")
	if err := writeDemoWorkspace(ws); err != nil {
		return c.fail(exitOther, "%v", err)
	}

	srv := fakellm.New(fakellm.WithLatency(*latency))
	defer srv.Close()
	if *delegate {
		srv.SetDefault(delegateDemo)
	} else {
		srv.Script(demoScript()...)
	}

	prov, err := demoProvider(*api, srv)
	if err != nil {
		return c.fail(exitOther, "%v", err)
	}
	dbPath := filepath.Join(dir, "state.db")
	st, err := sqlite.Open(ctx, dbPath, sqlite.Options{})
	if err != nil {
		return c.fail(exitOther, "%v", err)
	}
	defer st.Close()
	tools, err := builtin.New(builtin.Options{Root: ws})
	if err != nil {
		return c.fail(exitOther, "%v", err)
	}
	ag, err := agent.New(agent.Config{
		Store:     st,
		Tools:     tools,
		Workspace: ws,
		Subagents: agent.SubagentConfig{Enabled: *delegate},
		Config:    turn.Config{Routes: []turn.Route{{Provider: prov, Model: "demo-model"}}},
	})
	if err != nil {
		return c.fail(exitOther, "%v", err)
	}
	sess, err := ag.NewSession(ctx, agent.SessionOptions{Title: "demo"})
	if err != nil {
		return c.fail(exitOther, "%v", err)
	}

	fmt.Fprintf(out, "Talaria demo — scripted model server at %s (%s wire format)\n", srv.URL(), *api)
	fmt.Fprintf(out, "workspace: %s\ndatabase:  %s\n\n", ws, dbPath)
	prompt := "Read notes.txt and do what it asks."
	if *delegate {
		prompt = delegatePrompt
	}
	fmt.Fprintf(out, "> %s\n\n", prompt)
	prog := newProgress(out, out)
	res, err := ag.RunTurn(ctx, sess.ID, agent.Input{Text: prompt, Hooks: prog.hooks()})
	prog.mu.Lock()
	prog.endLine()
	prog.mu.Unlock()
	if err != nil {
		return c.fail(exitOther, "%v", err)
	}
	fmt.Fprintln(out)
	demoReport(ctx, out, st, srv, ws, sess.ID, &res, *delegate)
	if *keep {
		fmt.Fprintf(out, "kept: %s (TALARIA_DB=%s talaria sessions show %s)\n", dir, dbPath, sess.ID)
	}
	if *jsonOut {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
	}
	if len(srv.Violations()) > 0 {
		return exitOther
	}
	return exitCode(&res)
}

// demoProvider is the client of wire format api for the scripted server.
func demoProvider(api string, srv *fakellm.Server) (llm.Provider, error) {
	switch api {
	case config.APIAnthropic:
		return anthropic.New(anthropic.Config{Name: "fakellm", BaseURL: srv.AnthropicBaseURL(), APIKey: "demo"}), nil
	case config.APIOpenAIResponses:
		return openai.NewResponses(openai.Config{Name: "fakellm", BaseURL: srv.OpenAIBaseURL(), APIKey: "demo", ReasoningSummary: "auto"}), nil
	case config.APIGemini:
		return gemini.New(gemini.Config{Name: "fakellm", BaseURL: srv.GeminiBaseURL(), APIKey: "demo"})
	default:
		return openai.NewChat(openai.Config{Name: "fakellm", BaseURL: srv.OpenAIBaseURL(), APIKey: "demo"}), nil
	}
}

// demoReport shows what the turn left behind: the file the agent wrote,
// the stored messages, the subagents (delegate) and what the server saw.
func demoReport(ctx context.Context, out io.Writer, st store.Store, srv *fakellm.Server, ws, sid string, res *turn.Result, delegate bool) {
	if b, err := os.ReadFile(filepath.Join(ws, "low_stock.md")); err == nil {
		fmt.Fprintf(out, "low_stock.md, written by the agent's tool call:\n%s\n", indent(string(b)))
	}
	rows, err := st.Messages(ctx, sid, store.MessageQuery{})
	if err == nil {
		fmt.Fprintf(out, "The database holds %d messages for this session:", len(rows))
		for _, r := range rows {
			fmt.Fprintf(out, " %s", r.Role)
		}
		fmt.Fprintln(out)
	}
	if delegate {
		if tree, err := childTree(ctx, st, sid); err == nil && len(tree) > 0 {
			sp, _ := agent.SpendOf(ctx, st, sid)
			printChildren(out, sp, tree)
		}
	}
	fmt.Fprintf(out, "The model server received %d requests; strict validation problems: %d\n", len(srv.Requests()), len(srv.Violations()))
	for _, v := range srv.Violations() {
		fmt.Fprintln(out, "  "+v)
	}
	if !res.OK() && res.Explanation != "" {
		fmt.Fprintln(out, "talaria: "+res.Explanation)
	}
	fmt.Fprintln(out, summaryLine(res))
}

func writeDemoWorkspace(ws string) error {
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return err
	}
	for name, body := range demoFiles {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// demoScript is what the scripted model says. The later steps read the
// real tool results out of the request, so what the demo prints is what
// the tools really did.
func demoScript() []fakellm.Step {
	return []fakellm.Step{
		fakellm.TextCalls("I'll start by looking at the workspace.",
			fakellm.ToolCall("list_dir", `{}`)),
		fakellm.TextCalls("Let me read the notes and the inventory.",
			fakellm.ToolCall("read_file", `{"path":"notes.txt"}`),
			fakellm.ToolCall("read_file", `{"path":"inventory.csv"}`)),
		fakellm.Calls(fakellm.ToolCall("shell", `{"command":"awk -F, 'NR>1 && $2<5 {print $1\": \"$2}' inventory.csv"}`)),
		{Respond: func(req fakellm.Request) fakellm.Step {
			low := lastToolText(req)
			var b strings.Builder
			b.WriteString("# Low stock (fewer than 5)\n\n")
			for _, l := range strings.Split(strings.TrimSpace(stripExit(low)), "\n") {
				if l = strings.TrimSpace(l); l != "" {
					b.WriteString("- " + l + "\n")
				}
			}
			args, _ := json.Marshal(map[string]string{"path": "low_stock.md", "content": b.String()})
			return fakellm.TextCalls("Writing the list to low_stock.md.", fakellm.ToolCall("write_file", string(args)))
		}},
		{Respond: func(req fakellm.Request) fakellm.Step {
			n := 0
			for _, m := range req.Messages {
				if m.Role == "tool" {
					n++
				}
			}
			return fakellm.Text(fmt.Sprintf("Done. I read notes.txt, found the items with fewer than 5 in stock with a shell command, "+
				"and wrote them to low_stock.md (%d tool results informed this answer).", n))
		}},
	}
}

// lastToolText is the newest tool result in a recorded request.
func lastToolText(req fakellm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "tool" {
			return req.Messages[i].Text
		}
	}
	return ""
}

// stripExit drops a shell result's status line, keeping the output.
func stripExit(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "exit code") || strings.HasPrefix(l, "[") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
