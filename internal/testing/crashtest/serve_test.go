//go:build unix

package crashtest

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

var servingOn = regexp.MustCompile(`serving on (\S+)`)

// startServe starts `talaria serve` on a free port and returns its URL.
func (h *home) startServe(t *testing.T) (*proc, string) {
	t.Helper()
	p := h.start("serve", "--addr", "127.0.0.1:0", "--yes", "--drain", "1s")
	if !testenv.Eventually(20*time.Second, func() bool { return servingOn.MatchString(p.stderr.String()) || p.exited() }) || p.exited() {
		t.Fatalf("serve did not start:\n%s", p.stderr)
	}
	return p, servingOn.FindStringSubmatch(p.stderr.String())[1]
}

func api(t *testing.T, method, url, token, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s = %d %v", method, url, resp.StatusCode, out)
	}
	return out
}

// TestKillServeMidTurn: kill -9 a real `talaria serve` while a turn runs a
// shell command that appends to a file and then sleeps, with another
// message queued behind it. With handoff: continue (the default) the next
// start continues the cut-off turn from its stored rows: the command is not
// run again (its result says it may or may not have taken effect), the
// model answers, then the queued message runs. With handoff: interrupt it
// marks the turn interrupted (a display-only row; it is not re-run). Either
// way the file was appended to exactly once, the session repairs on load
// and the model gets a valid transcript.
func TestKillServeMidTurn(t *testing.T) {
	for _, mode := range []string{"continue", "interrupt"} {
		t.Run(mode, func(t *testing.T) { killServeMidTurn(t, mode) })
	}
}

func killServeMidTurn(t *testing.T, mode string) {
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	srv.SetDefault(func(r fakellm.Request) fakellm.Step {
		last := r.Messages[len(r.Messages)-1]
		switch {
		case last.Role == "user" && strings.Contains(last.Text, "first"):
			return fakellm.Calls(fakellm.ToolCall("shell", `{"command":"echo x >> count.txt && sleep 3"}`))
		case last.Role == "user" && strings.Contains(last.Text, "second"):
			return fakellm.Text("second done")
		}
		return fakellm.Text("first done")
	})
	h := newHome(t, srv)
	if mode == "interrupt" {
		if err := os.WriteFile(filepath.Join(h.dir, "config.yaml"), []byte("serve:\n  handoff: interrupt\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p, url := h.startServe(t)
	// stdout and stderr are read apart: the token may land after "serving on".
	testenv.Eventually(5*time.Second, func() bool { return strings.Contains(p.stdout.String(), "tal_") })
	lines := strings.Split(strings.TrimSpace(p.stdout.String()), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[1], "tal_") {
		t.Fatalf("first start did not print a token: %q\n%s", p.stdout.String(), p.stderr)
	}
	token := lines[1]
	sid := api(t, "POST", url+"v1/sessions", token, `{}`)["id"].(string)
	first := api(t, "POST", url+"v1/sessions/"+sid+"/messages", token, `{"text":"first"}`)["turn_id"].(string)
	count := filepath.Join(h.ws, "count.txt")
	// Wait until the command has appended (it is sleeping now).
	if !testenv.Eventually(20*time.Second, func() bool {
		b, _ := os.ReadFile(count)
		return len(b) > 0
	}) {
		t.Fatalf("the command never ran:\n%s", p.stderr)
	}
	second := api(t, "POST", url+"v1/sessions/"+sid+"/messages", token, `{"text":"second"}`)["turn_id"].(string)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(t, 10*time.Second)

	p2, url2 := h.startServe(t)
	if strings.Contains(p2.stdout.String(), "tal_") {
		t.Fatal("the restart printed a new token")
	}
	if !testenv.Eventually(20*time.Second, func() bool {
		rows := h.rows(sid)
		return len(rows) > 0 && rows[len(rows)-1].Text() == "second done"
	}) {
		t.Fatalf("the queued message did not run after the restart; rows %v\n%s", testenv.Roles(h.rows(sid)), p2.stderr)
	}
	rows := h.rows(sid)
	var cutOff, answers, uncertain int
	for _, r := range rows {
		if r.TurnID == first && r.Kind == store.RowFailure && strings.Contains(r.Text(), "interrupted") {
			cutOff++
		}
		if r.TurnID == first && r.Role == llm.RoleAssistant && r.Text() == "first done" {
			answers++
		}
		if r.TurnID == first && r.Role == llm.RoleTool && strings.Contains(r.Text(), "may or may not have taken effect") {
			uncertain++
		}
	}
	want := [3]int{1, 0, 0} // interrupt: one cut-off row, no answer
	if mode == "continue" {
		want = [3]int{0, 1, 1} // the turn finished: the command's uncertain result, one answer
	}
	if got := [3]int{cutOff, answers, uncertain}; got != want {
		t.Fatalf("cut-off rows, answers, uncertain results of the cut-off turn = %v; want %v; rows %v", got, want, testenv.Roles(rows))
	}
	if mode == "continue" {
		// `talaria trace` shows where the turn moved.
		out, err := h.command(t.Context(), "trace", "--turn", "1", sid).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "handoff") || !strings.Contains(string(out), "moved from") {
			t.Errorf("trace does not show the handoff (%v):\n%s", err, out)
		}
	}
	if b, _ := os.ReadFile(count); string(b) != "x\n" {
		t.Fatalf("the command's side effect happened %d times; want exactly once", strings.Count(string(b), "x"))
	}
	// The turns after the kill sent a valid transcript (repaired or
	// continued) and the session takes more turns.
	checkWire(t, srv)
	out := api(t, "GET", url2+"v1/sessions/"+sid+"/messages", token, "")
	if n := len(out["messages"].([]any)); n < 4 {
		t.Fatalf("transcript over the API has %d rows", n)
	}
	_ = second
	if err := p2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p2.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("serve exit on SIGTERM = %d\n%s", code, p2.stderr)
	}
}
