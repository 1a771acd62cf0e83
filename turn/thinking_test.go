package turn_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
)

// Extended thinking: the signed thinking of the turn's tool loop goes back
// byte-identical on the next call, and a block that was modified after it
// was stored (here, edited in the database) is rejected by the API, which
// the engine answers with exactly one retry without thinking.
func TestAnthropicThinkingReplayAndStrippedRetry(t *testing.T) {
	env := testenv.New(t, testenv.Options{API: "anthropic", ThinkingBudget: 2048})
	if err := os.WriteFile(filepath.Join(env.Workspace, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env.Srv.Script(
		fakellm.Step{Reasoning: "I should read a.txt first.", Calls: []fakellm.Call{fakellm.ToolCall("read_file", `{"path":"a.txt"}`)}},
		fakellm.Step{Reasoning: "It says alpha.", Text: "The file says alpha."},
	)
	res := env.Run("What does a.txt say?")
	if !res.OK() {
		t.Fatalf("turn 1: %+v", res)
	}
	env.NoViolations()
	reqs := env.Srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if reqs[0].ThinkingBudget != 2048 || reqs[1].ThinkingBudget != 2048 {
		t.Errorf("thinking budgets = %d, %d; want 2048 on both calls", reqs[0].ThinkingBudget, reqs[1].ThinkingBudget)
	}
	// The stored signature is replayed exactly: the signature string sent
	// is the one the first answer carried, next to the same thinking text.
	rows := env.Rows()
	var sig string
	for _, r := range rows {
		if r.Role == "assistant" && len(r.ToolCalls) > 0 && r.Reasoning != nil && len(r.Reasoning.Blocks) == 1 {
			sig = r.Reasoning.Blocks[0].Signature
		}
	}
	if sig == "" {
		t.Fatalf("the tool-calling assistant row stored no signed thinking block: %+v", rows)
	}
	want := `{"type":"thinking","thinking":"I should read a.txt first.","signature":"` + sig + `"}`
	if !strings.Contains(string(reqs[1].Body), want) {
		t.Errorf("second request does not replay the thinking block byte for byte; want %s in\n%s", want, reqs[1].Body)
	}

	// Edit the stored thinking text: the signature no longer covers it.
	db, err := sql.Open("sqlite", env.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(context.Background(),
		`UPDATE messages SET reasoning = replace(reasoning, 'read a.txt first', 'read a.txt FIRST') WHERE reasoning IS NOT NULL`); err != nil {
		t.Fatal(err)
	}
	env.Srv.Script(fakellm.Text("Still alpha."))
	res = env.Run("And again?")
	if !res.OK() || res.FinalText != "Still alpha." {
		t.Fatalf("turn 2 = %+v, want one stripped retry to succeed", res)
	}
	reqs = env.Srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4 (rejected, then one retry without thinking)", len(reqs))
	}
	if v := env.Srv.Violations(); len(v) != 1 || !strings.Contains(v[0], "Invalid `signature`") {
		t.Errorf("violations = %q, want the one signature rejection", v)
	}
	for _, m := range reqs[3].Messages {
		if len(m.Signatures) > 0 || m.Reasoning != "" {
			t.Errorf("the retry still replays thinking: %+v", m)
		}
	}
}
