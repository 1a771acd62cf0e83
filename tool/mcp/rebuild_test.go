//go:build unix

package mcp_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// rebuilds collects the PromptRebuilt updates of the turns it hooks.
type rebuilds struct {
	mu  sync.Mutex
	got []turn.PromptRebuilt
}

func (r *rebuilds) hooks() turn.Hooks {
	return turn.Hooks{Sink: func(u turn.Update) {
		if p, ok := u.(turn.PromptRebuilt); ok {
			r.mu.Lock()
			r.got = append(r.got, p)
			r.mu.Unlock()
		}
	}}
}

func (r *rebuilds) all() []turn.PromptRebuilt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func rebuildRows(rows []store.Message) []store.Message {
	var out []store.Message
	for _, r := range rows {
		if r.Kind == store.RowPromptRebuilt {
			out = append(out, r)
		}
	}
	return out
}

// A session resumed by a process whose MCP server now offers another tool
// (the server changed its tool list; the next process lists it) gets that
// tool and a system prompt rebuilt for it, exactly once, said in the
// stream and the transcript; the turn after that changes nothing and its
// request prefix (system prompt and tools) is byte-identical.
func TestNewMCPToolRebuildsPromptOnce(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			f := newManager(t, nil, stdio("t", ""))
			first := f.session(t)
			env := turnEnv(t, api, first.Tools(), &approver{})
			seen := &rebuilds{}
			run := func(ag *agent.Agent, text string) {
				t.Helper()
				env.Srv.Script(fakellm.Text("ok: " + text))
				res, err := ag.RunTurn(context.Background(), env.Session.ID, agent.Input{Text: text, Hooks: seen.hooks()})
				if err != nil || res.Exit != turn.ExitCompleted {
					t.Fatalf("turn %q: exit %s, %v", text, res.Exit, err)
				}
			}
			run(env.Agent, "first")
			if n := len(seen.all()); n != 0 {
				t.Fatalf("%d rebuilds on an unchanged session", n)
			}

			// The server grows a tool; the next process lists it.
			call(t, context.Background(), find(t, first.Tools(), "t__add_tool"), `{}`)
			if !testenv.Eventually(5*time.Second, func() bool {
				return f.status.count("changed its tool list") == 1
			}) {
				t.Fatalf("no list_changed: %v", f.status.all())
			}
			second := f.session(t)
			cfg := env.Config
			cfg.Tools = nil
			for _, x := range env.Config.Tools {
				if !strings.HasPrefix(x.Info().Name, "t__") {
					cfg.Tools = append(cfg.Tools, x)
				}
			}
			cfg.Tools = append(cfg.Tools, second.Tools()...)
			next, err := agent.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer next.Close()

			run(next, "second")
			run(next, "third")

			got := seen.all()
			if len(got) != 1 || !slices.Equal(got[0].ToolsAdded, []string{"t__late"}) ||
				len(got[0].ToolsRemoved)+len(got[0].ToolsChanged) != 0 || got[0].Memory || got[0].Instructions {
				t.Fatalf("rebuild updates %+v; want one, adding t__late", got)
			}
			if line := got[0].Line(); line != "capabilities changed (1 tool added: t__late): system prompt rebuilt once" {
				t.Errorf("line %q", line)
			}
			rows := rebuildRows(env.Rows())
			if len(rows) != 1 || !strings.Contains(rows[0].Text(), "t__late") {
				t.Fatalf("transcript rebuild rows %+v; want one naming t__late", rows)
			}
			reqs := env.Srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests", len(reqs))
			}
			if strings.Contains(reqs[0].System, "t__late") || slices.Contains(reqs[0].Tools, "t__late") {
				t.Fatal("the first request already knew t__late")
			}
			for i, r := range reqs[1:] {
				if !strings.Contains(r.System, "t__late") || !slices.Contains(r.Tools, "t__late") {
					t.Errorf("request %d: t__late missing from the system prompt or the tools", i+2)
				}
			}
			if prefix(t, reqs[1]) != prefix(t, reqs[2]) {
				t.Error("the request prefix changed between two turns with no capability change")
			}
			stored, err := env.Store.GetSession(context.Background(), env.Session.ID)
			if err != nil {
				t.Fatal(err)
			}
			if stored.SystemPrompt != reqs[2].System {
				t.Error("the stored system prompt is not the one sent")
			}
			env.NoViolations()
		})
	}
}

// prefix is the request's cacheable prefix as raw bytes: every top-level
// field but the conversation (tools, system prompt, settings), and the
// conversation's first entry (OpenAI's system message).
func prefix(t *testing.T, r fakellm.Request) string {
	t.Helper()
	var body map[string]json.RawMessage
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatalf("request body: %v", err)
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(body)) {
		switch k {
		case "messages", "input", "contents":
			var conv []json.RawMessage
			if err := json.Unmarshal(body[k], &conv); err != nil || len(conv) == 0 {
				t.Fatalf("request %s: %v", k, err)
			}
			b.WriteString(k + "[0]=" + string(conv[0]) + "\n")
		default:
			b.WriteString(k + "=" + string(body[k]) + "\n")
		}
	}
	return b.String()
}
