package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/telemetrytest"
)

// `talaria run` with only OTEL_EXPORTER_OTLP_ENDPOINT set delivers the
// turn's spans before it exits, and `talaria trace` shows the same turn
// from the database without any collector.
func TestRunExportsAndTraceShowsTimeline(t *testing.T) {
	e := newCLIEnv(t)
	collector := telemetrytest.NewReceiver(t)
	e.env["OTEL_EXPORTER_OTLP_ENDPOINT"] = collector.URL

	e.srv.Script(
		fakellm.RawError(503, `{"error":{"message":"The server is overloaded or not ready yet.","type":"server_error","param":null,"code":null}}`),
		fakellm.Calls(fakellm.ToolCall("list_dir", `{"path":"."}`)),
		fakellm.Text("The directory is empty.").WithUsage(1200, 40),
	)
	out := e.runTurn("openai", []string{"--json", "--quiet"}, "what is here?")
	if out.code != exitOK {
		t.Fatalf("run: %d %s", out.code, out.stderr)
	}
	var res struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal([]byte(out.stdout), &res); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range collector.Spans() {
		names = append(names, s.Name)
	}
	got := strings.Join(names, ",")
	for _, want := range []string{"turn", "chat " + testModel, "execute_tool list_dir"} {
		if !strings.Contains(got, want) {
			t.Errorf("collector got spans %q; missing %q", got, want)
		}
	}

	tr := e.run("", "trace", res.SessionID)
	if tr.code != exitOK {
		t.Fatalf("trace: %d %s", tr.code, tr.stderr)
	}
	for _, want := range []string{"turn 1/1", "completed", "3 API calls", "call_failed", "overloaded → retry", "wait", "list_dir", "1200 in / 40 out · stop · $0.0027", "session " + res.SessionID + " total: $"} {
		if !strings.Contains(tr.stdout, want) {
			t.Errorf("trace output lacks %q:\n%s", want, tr.stdout)
		}
	}

	js := e.run("", "trace", "--json", "--turn", "1", res.SessionID)
	var doc traceJSON
	if err := json.Unmarshal([]byte(js.stdout), &doc); err != nil || len(doc.Turns) != 1 {
		t.Fatalf("trace --json: %v %s", err, js.stdout)
	}
	var kinds []string
	for _, ev := range doc.Turns[0].Events {
		kinds = append(kinds, ev.Kind)
	}
	if strings.Join(kinds, ",") != "turn,call_failed,wait,call,tool,call" {
		t.Errorf("event kinds %v", kinds)
	}

	if o := e.run("", "trace", "--turn", "4", res.SessionID); o.code != exitUsage {
		t.Errorf("--turn out of range: exit %d", o.code)
	}
	if o := e.run("", "trace", "no-such-session"); o.code != exitOther || !strings.Contains(o.stderr, "no session") {
		t.Errorf("unknown session: %d %q", o.code, o.stderr)
	}
	if o := e.run("", "trace"); o.code != exitUsage {
		t.Errorf("no argument: exit %d", o.code)
	}
}
