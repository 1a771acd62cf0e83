package gemini

import (
	"context"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
)

// The request headers and URL stay the SDK's in the cases the body tests
// do not reach: a call under a deadline (x-server-timeout), a per-call
// key, and model names with a resource prefix.
func TestRequestLineAndHeadersMatchSDK(t *testing.T) {
	rec := newRecorder(t)
	c := sdkClient(t, rec.srv.URL)
	p, err := New(Config{BaseURL: rec.srv.URL, APIKey: "k", Headers: map[string]string{"X-Extra": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		model    string
		deadline time.Duration
	}{
		{"deadline", "gemini-2.5-flash", 90 * time.Second},
		{"models/ prefix", "models/gemini-2.5-pro", 0},
		{"tunedModels/ prefix", "tunedModels/my-tune", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &llm.Request{Model: tc.model, Messages: []llm.Message{llm.NewText(llm.RoleUser, "hi")}}
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			contents, config, err := sdkBuildRequest(req, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, err := range c.Models.GenerateContentStream(ctx, req.Model, contents, config) {
				if err != nil {
					t.Fatal(err)
				}
			}
			wantLine, wantHeader, _ := rec.taken()
			if _, err := llm.Collect(p.Stream(ctx, req), nil); err != nil {
				t.Fatal(err)
			}
			line, header, _ := rec.taken()
			if line != wantLine {
				t.Errorf("request line %q, the SDK sends %q", line, wantLine)
			}
			if len(header) != len(wantHeader) {
				t.Errorf("headers %v, the SDK sends %v", header, wantHeader)
			}
			for k := range wantHeader {
				if header.Get(k) != wantHeader.Get(k) {
					t.Errorf("header %s = %q, the SDK sends %q", k, header.Get(k), wantHeader.Get(k))
				}
			}
			if tc.deadline > 0 && header.Get("x-server-timeout") == "" {
				t.Error("no x-server-timeout under a deadline")
			}
		})
	}
	// A per-call key replaces the configured one.
	req := &llm.Request{Model: "m", APIKey: "per-call", Messages: []llm.Message{llm.NewText(llm.RoleUser, "hi")}}
	if _, err := llm.Collect(p.Stream(context.Background(), req), nil); err != nil {
		t.Fatal(err)
	}
	if _, h, _ := rec.taken(); h.Get("x-goog-api-key") != "per-call" {
		t.Errorf("x-goog-api-key = %q", h.Get("x-goog-api-key"))
	}
}

// A model name that would change the URL is refused before any request.
func TestModelNameCannotEscapeThePath(t *testing.T) {
	rec := newRecorder(t)
	p, err := New(Config{BaseURL: rec.srv.URL, APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{"", "m?alt=json", "a&b", "../../v1/x"} {
		req := &llm.Request{Model: model, Messages: []llm.Message{llm.NewText(llm.RoleUser, "hi")}}
		_, err := llm.Collect(p.Stream(context.Background(), req), nil)
		if err == nil {
			t.Errorf("model %q accepted", model)
		}
	}
	if line, _, _ := rec.taken(); line != "" {
		t.Errorf("a request was sent: %s", line)
	}
}
