package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/pgtest"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/postgres"
	"github.com/talaria-agent/talaria/turn"
)

// Several talaria runs, each with its own connection pool and lease holder
// as separate nodes would have, send turns to one session on one
// PostgreSQL database at once. The lease serializes them: every turn
// completes with the answer to its own prompt, and the stored transcript
// is whole turns one after another (user, tool call, tool result, answer)
// with none lost, doubled or interleaved. The strict model server also
// rejects any request whose transcript is malformed.
func TestTurnsOnOneSessionSerializeAcrossNodes(t *testing.T) {
	e := newCLIEnv(t)
	pg := pgtest.New(t)
	e.env["TALARIA_DATABASE_URL"] = pg
	e.writeFile("a.txt", "alpha\n")
	// Stateless replies: a tool call for a new prompt, then an answer
	// naming the prompt it answers, so cross-talk between turns shows.
	e.srv.SetDefault(func(req fakellm.Request) fakellm.Step {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "user" {
			return fakellm.Calls(fakellm.ToolCall("read_file", `{"path":"a.txt"}`)).WithLatency(10 * time.Millisecond)
		}
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role == "user" {
				return fakellm.Text("answer: " + req.Messages[i].Text)
			}
		}
		return fakellm.Text("no prompt")
	})
	first := decodeResult(t, e.runTurn("openai", []string{"--json", "--quiet"}, "p-start"))
	if first.Exit != turn.ExitCompleted {
		t.Fatalf("first turn: %s %+v", first.Exit, first.Failure)
	}
	sess := first.SessionID

	const nodes, turns = 3, 4
	var wg sync.WaitGroup
	errs := make(chan error, nodes*turns)
	for n := range nodes {
		wg.Go(func() {
			for i := range turns {
				prompt := fmt.Sprintf("p-node%d-turn%d", n, i)
				out := e.runTurn("openai", []string{"--json", "--quiet", "--session", sess, "--wait", "5m"}, prompt)
				res := decodeResult(t, out)
				if res.Exit != turn.ExitCompleted || res.FinalText != "answer: "+prompt {
					errs <- fmt.Errorf("%s: exit %s, answer %q, failure %+v", prompt, res.Exit, res.FinalText, res.Failure)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	st, err := postgres.Open(t.Context(), pg, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows, err := st.Messages(t.Context(), sess, store.MessageQuery{IncludeArchived: true})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := 0; i < len(rows); i += 4 {
		if i+4 > len(rows) {
			t.Fatalf("a partial turn at the end: %v", describeRows(rows[i:]))
		}
		u, call, result, answer := rows[i], rows[i+1], rows[i+2], rows[i+3]
		prompt := u.Text()
		if u.Role != llm.RoleUser || call.Role != llm.RoleAssistant || len(call.ToolCalls) != 1 ||
			result.Role != llm.RoleTool || result.ToolCallID != call.ToolCalls[0].ID ||
			answer.Role != llm.RoleAssistant || answer.Text() != "answer: "+prompt {
			t.Fatalf("rows %d-%d are not one whole turn: %v", i, i+3, describeRows(rows[i:i+4]))
		}
		if seen[prompt] {
			t.Fatalf("turn %q stored twice", prompt)
		}
		seen[prompt] = true
	}
	if len(seen) != nodes*turns+1 {
		t.Fatalf("%d turns stored, want %d", len(seen), nodes*turns+1)
	}
}

func describeRows(rows []store.Message) []string {
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("#%d %s %q calls=%d", r.Seq, r.Role, strings.TrimSpace(r.Text()), len(r.ToolCalls)))
	}
	return out
}
