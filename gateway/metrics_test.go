package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testenv"
)

func (h *harness) metrics(t *testing.T) string {
	t.Helper()
	req, _ := http.NewRequest("GET", h.srv.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+h.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestMetricsCountRecoveries: a retried call, a fallback, tokens, turns by
// exit and API calls by provider/model/class show up in /metrics.
func TestMetricsCountRecoveries(t *testing.T) {
	h := newHarness(t, harnessOptions{envOpts: testenv.Options{Fallbacks: []string{"fb-model"}}})
	sid := h.session(h.token)
	s := h.open(h.token, sid, 0)
	h.env.Srv.ScriptModel("test-model", fakellm.HTTPError(503, "server_error", "overloaded, try later"), fakellm.Text("after a retry"))
	t1 := h.send(h.token, sid, "one")
	s.until(t, 10*time.Second, finished(t1))
	h.env.Srv.ScriptModel("test-model", fakellm.HTTPError(404, "not_found_error", "The model `test-model` does not exist"))
	h.env.Srv.ScriptModel("fb-model", fakellm.Text("from the fallback"))
	t2 := h.send(h.token, sid, "two")
	evs := s.until(t, 10*time.Second, finished(t2))
	if r := resultOf(t, evs[len(evs)-1]); r["final_text"] != "from the fallback" {
		t.Fatalf("result = %v", r)
	}
	if !strings.Contains(types(evs), "status") {
		t.Fatalf("no status event for the fallback: %s", types(evs))
	}
	m := h.metrics(t)
	for _, want := range []string{
		`talaria_turns_total{exit="completed"} 2`,
		`talaria_retries_total 1`,
		`talaria_fallbacks_total 1`,
		`talaria_api_calls_total{class="overloaded",model="test-model",provider="primary"} 1`,
		`talaria_api_calls_total{class="ok",model="test-model",provider="primary"} 1`,
		`talaria_api_calls_total{class="model_not_found",model="test-model",provider="primary"} 1`,
		`talaria_api_call_duration_seconds_count{model="fb-model",provider="fallback"} 1`,
		`talaria_api_calls_total{class="ok",model="fb-model",provider="fallback"} 1`,
		`talaria_tokens_total{kind="input",model="fb-model",provider="fallback"}`,
		`talaria_active_turns 0`,
		`talaria_queued_messages 0`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		for _, l := range strings.Split(m, "\n") {
			if strings.HasPrefix(l, "talaria_") && !strings.Contains(l, "_bucket") {
				t.Log(l)
			}
		}
	}
}
