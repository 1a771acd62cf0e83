package gateway

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/internal/testing/telemetrytest"
)

func errCode(out map[string]any) api.ErrorCode {
	e, _ := out["error"].(map[string]any)
	c, _ := e["code"].(string)
	return api.ErrorCode(c)
}

// TestAPIContract checks every route's answers, including the error cases,
// each a JSON error with a stable code.
func TestAPIContract(t *testing.T) {
	h := newHarness(t, harnessOptions{configure: func(c *Config) { c.MaxBodyBytes = 4096 }})
	sid := h.session(h.token)
	bobs := h.session(h.other)
	tid := h.send(h.token, sid, "hello kumquat")
	s := h.open(h.token, sid, 0)
	s.until(t, 10*time.Second, finished(tid))
	h.send(h.other, bobs, "bob kumquat")

	big := `{"text":"` + strings.Repeat("x", 5000) + `"}`
	cases := []struct {
		name, method, path, token string
		body                      any
		status                    int
		code                      api.ErrorCode
	}{
		{"no token", "GET", "/v1/sessions", "", nil, 401, api.CodeUnauthorized},
		{"wrong token", "GET", "/v1/sessions", "tal_wrong", nil, 401, api.CodeUnauthorized},
		{"metrics needs token", "GET", "/metrics", "", nil, 401, api.CodeUnauthorized},
		{"metrics needs an admin token", "GET", "/metrics", h.token, nil, 403, api.CodeForbidden},
		{"openapi needs token", "GET", "/v1/openapi.json", "", nil, 401, api.CodeUnauthorized},
		{"other principal get", "GET", "/v1/sessions/" + sid, h.other, nil, 404, api.CodeNotFound},
		{"other principal delete", "DELETE", "/v1/sessions/" + sid, h.other, nil, 404, api.CodeNotFound},
		{"other principal usage", "GET", "/v1/sessions/" + sid + "/usage", h.other, nil, 404, api.CodeNotFound},
		{"other principal messages", "GET", "/v1/sessions/" + sid + "/messages", h.other, nil, 404, api.CodeNotFound},
		{"other principal events", "GET", "/v1/sessions/" + sid + "/events", h.other, nil, 404, api.CodeNotFound},
		{"other principal post", "POST", "/v1/sessions/" + sid + "/messages", h.other, map[string]any{"text": "hi"}, 404, api.CodeNotFound},
		{"other principal interrupt", "POST", "/v1/turns/" + tid + "/interrupt", h.other, nil, 404, api.CodeNotFound},
		{"unknown session", "GET", "/v1/sessions/nope", h.token, nil, 404, api.CodeNotFound},
		{"unknown session post", "POST", "/v1/sessions/nope/messages", h.token, map[string]any{"text": "hi"}, 404, api.CodeNotFound},
		{"unknown route", "GET", "/v1/nothing", h.token, nil, 404, api.CodeNotFound},
		{"malformed json", "POST", "/v1/sessions/" + sid + "/messages", h.token, `{"text": `, 400, api.CodeInvalidJSON},
		{"unknown field", "POST", "/v1/sessions/" + sid + "/messages", h.token, `{"txt": "a"}`, 400, api.CodeInvalidJSON},
		{"empty text", "POST", "/v1/sessions/" + sid + "/messages", h.token, `{"text": " "}`, 400, api.CodeBadRequest},
		{"oversized body", "POST", "/v1/sessions/" + sid + "/messages", h.token, big, 413, api.CodeBodyTooLarge},
		{"bad decision", "POST", "/v1/turns/" + tid + "/approvals/c1", h.token, map[string]any{"decision": "maybe"}, 400, api.CodeBadRequest},
		{"approval of finished turn", "POST", "/v1/turns/" + tid + "/approvals/c1", h.token, map[string]any{"decision": "allow"}, 404, api.CodeNotFound},
		{"interrupt finished turn", "POST", "/v1/turns/" + tid + "/interrupt", h.token, nil, 404, api.CodeNotFound},
		{"search needs q", "GET", "/v1/search", h.token, nil, 400, api.CodeBadRequest},
		{"bad limit", "GET", "/v1/sessions?limit=x", h.token, nil, 400, api.CodeBadRequest},
		{"explain needs provider", "POST", "/v1/explain-error", h.token, map[string]any{"status": 429}, 400, api.CodeBadRequest},
		{"bad Last-Event-ID", "GET", "/v1/sessions/" + sid + "/events?after=x", h.token, nil, 400, api.CodeBadRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out := h.do(c.method, c.path, c.token, c.body)
			if code != c.status || errCode(out) != c.code {
				t.Fatalf("%s %s = %d %v, want %d code %q", c.method, c.path, code, out, c.status, c.code)
			}
			if e := out["error"].(map[string]any); e["message"] == "" {
				t.Fatalf("error without a message: %v", out)
			}
		})
	}

	t.Run("healthz and readyz need no token", func(t *testing.T) {
		for _, p := range []string{"/healthz", "/readyz"} {
			if code, out := h.do("GET", p, "", nil); code != 200 || out["ok"] != true {
				t.Fatalf("%s = %d %v", p, code, out)
			}
		}
	})
	t.Run("web page needs no token", func(t *testing.T) {
		resp, err := http.Get(h.srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("/ = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	})
	t.Run("list is per principal and paged", func(t *testing.T) {
		h.session(h.token)
		code, out := h.do("GET", "/v1/sessions?limit=1", h.token, nil)
		list := out["sessions"].([]any)
		if code != 200 || len(list) != 1 || out["next_offset"] != float64(1) {
			t.Fatalf("page 1 = %d %v", code, out)
		}
		_, out = h.do("GET", "/v1/sessions?limit=10&offset=1", h.token, nil)
		if l := out["sessions"].([]any); len(l) != 1 {
			t.Fatalf("page 2 = %v", out)
		}
		_, out = h.do("GET", "/v1/sessions", h.other, nil)
		if l := out["sessions"].([]any); len(l) != 1 || l[0].(map[string]any)["id"] != bobs {
			t.Fatalf("bob's list = %v", out)
		}
	})
	t.Run("get, usage, messages", func(t *testing.T) {
		code, out := h.do("GET", "/v1/sessions/"+sid, h.token, nil)
		if code != 200 || out["id"] != sid || out["messages"].(float64) < 2 {
			t.Fatalf("get = %d %v", code, out)
		}
		code, out = h.do("GET", "/v1/sessions/"+sid+"/usage", h.token, nil)
		if u := out["usage"].(map[string]any); code != 200 || u["api_calls"].(float64) != 1 || u["input_tokens"].(float64) == 0 {
			t.Fatalf("usage = %d %v", code, out)
		}
		code, out = h.do("GET", "/v1/sessions/"+sid+"/messages", h.token, nil)
		msgs := out["messages"].([]any)
		if code != 200 || len(msgs) != 2 || msgs[1].(map[string]any)["text"] != "echo: hello kumquat" {
			t.Fatalf("messages = %d %v", code, out)
		}
	})
	t.Run("search sees only own sessions", func(t *testing.T) {
		code, out := h.do("GET", "/v1/search?q=kumquat", h.token, nil)
		hits := out["hits"].([]any)
		if code != 200 || len(hits) == 0 {
			t.Fatalf("search = %d %v", code, out)
		}
		for _, x := range hits {
			if x.(map[string]any)["session_id"] != sid {
				t.Fatalf("alice's search found another principal's session: %v", x)
			}
			// api.SearchHit, the CLI's shape too: the row's id to fetch it by.
			if id, _ := x.(map[string]any)["message_id"].(float64); id <= 0 {
				t.Fatalf("hit without message_id: %v", x)
			}
		}
	})
	t.Run("openapi", func(t *testing.T) {
		code, out := h.do("GET", "/v1/openapi.json", h.token, nil)
		paths, _ := out["paths"].(map[string]any)
		if code != 200 || paths["/v1/sessions/{id}/events"] == nil {
			t.Fatalf("openapi = %d, paths %v", code, paths)
		}
	})
	t.Run("explain-error", func(t *testing.T) {
		code, out := h.do("POST", "/v1/explain-error", h.token, map[string]any{"provider": "openai", "status": 429,
			"headers": map[string]string{"Retry-After": "7"}, "body": `{"error":{"message":"Rate limit reached","type":"requests"}}`})
		if code != 200 || out["class"] != "rate_limit" || out["retryable"] != true || out["explanation"] == "" {
			t.Fatalf("explain = %d %v", code, out)
		}
	})
	t.Run("metrics", func(t *testing.T) {
		scrape := telemetrytest.ParseProm(t, h.metrics(t))
		if got, _, _ := scrape.Value("talaria_turns_total", map[string]string{"talaria_exit": "completed"}); got < 1 {
			t.Errorf("talaria_turns_total{talaria_exit=completed} = %v", got)
		}
		if _, n, _ := scrape.Value("talaria_turn_duration_seconds", nil); n < 1 {
			t.Errorf("talaria_turn_duration_seconds count = %d", n)
		}
		for _, name := range []string{"talaria_active_turns", "talaria_queued_messages", "talaria_sse_subscribers", "gen_ai_client_operation_duration_seconds"} {
			if _, _, found := scrape.Value(name, nil); !found {
				t.Errorf("/metrics lacks %s", name)
			}
		}
		// The refused requests above, by status.
		for status, route := range map[string]string{"401": "GET /metrics", "413": "unmatched", "404": "GET /v1/sessions/{id}"} {
			if _, n, _ := scrape.Value("http_server_request_duration_seconds", map[string]string{"http_response_status_code": status, "http_route": route}); n < 1 {
				t.Errorf("no %s answer of %s counted", status, route)
			}
		}
	})
	t.Run("delete", func(t *testing.T) {
		if code, _ := h.do("DELETE", "/v1/sessions/"+sid, h.token, nil); code != 204 {
			t.Fatalf("delete = %d", code)
		}
		if code, _ := h.do("GET", "/v1/sessions/"+sid, h.token, nil); code != 404 {
			t.Fatalf("get after delete = %d", code)
		}
	})
}

// TestSessionOverrides: a session may name its own model (and, where the
// server allows it, workspace and provider); the turn uses them.
func TestSessionOverrides(t *testing.T) {
	h := newHarness(t, harnessOptions{configure: func(c *Config) { c.Limits.Default.Models = []string{"primary/*"} }})
	code, out := h.do("POST", "/v1/sessions", h.token, map[string]any{"model": "other-model", "system_prompt_extra": "Always answer in haiku."})
	if code != 201 || out["model"] != "other-model" {
		t.Fatalf("create = %d %v", code, out)
	}
	sid := out["id"].(string)
	s := h.open(h.token, sid, 0)
	s.until(t, 10*time.Second, finished(h.send(h.token, sid, "hi")))
	reqs := h.env.Srv.Requests()
	last := reqs[len(reqs)-1]
	if last.Model != "other-model" || !strings.Contains(last.System, "Always answer in haiku.") {
		t.Fatalf("request went to model %q with system %q", last.Model, last.System)
	}
	if code, out := h.do("POST", "/v1/sessions", h.token, map[string]any{"provider": "elsewhere"}); code != 400 || errCode(out) != api.CodeNotImplemented {
		t.Fatalf("create with a provider = %d %v", code, out)
	}
	// A workspace is chosen by name; a path is no name.
	if code, out := h.do("POST", "/v1/sessions", h.token, map[string]any{"workspace": t.TempDir()}); code != 400 || errCode(out) != api.CodeBadRequest {
		t.Fatalf("create with a path = %d %v", code, out)
	}
}
