package llm_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/anthropic"
	"github.com/talaria-agent/talaria/llm/gemini"
	"github.com/talaria-agent/talaria/llm/openai"
)

// wireAdapter builds one adapter against a server root, and says which base
// URL it is given there (each SDK wants its own form of the root).
type wireAdapter struct {
	api   string
	base  func(root string) string
	build func(t *testing.T, base string) llm.Provider
}

var wireAdapters = []wireAdapter{
	{api: "openai", base: func(root string) string { return root + "/v1" },
		build: func(t *testing.T, base string) llm.Provider {
			return openai.NewChat(openai.Config{Name: "p", BaseURL: base, APIKey: "k"})
		}},
	{api: "openai-responses", base: func(root string) string { return root + "/v1" },
		build: func(t *testing.T, base string) llm.Provider {
			return openai.NewResponses(openai.Config{Name: "p", BaseURL: base, APIKey: "k"})
		}},
	{api: "anthropic", base: func(root string) string { return root },
		build: func(t *testing.T, base string) llm.Provider {
			return anthropic.New(anthropic.Config{Name: "p", BaseURL: base, APIKey: "k"})
		}},
	{api: "gemini", base: func(root string) string { return root + "/" },
		build: func(t *testing.T, base string) llm.Provider {
			p, err := gemini.New(gemini.Config{Name: "p", BaseURL: base, APIKey: "k"})
			if err != nil {
				t.Fatal(err)
			}
			return p
		}},
}

// Every error an adapter makes names its wire format and the base URL it
// was given, whatever failed (an HTTP error, an error event in the stream, a
// broken stream, a refused connection, a 200 that is no answer, a request
// that was never sent), and InputFromError hands both to the classifier:
// no caller has to tell it which format failed.
func TestAdapterErrorsNameWireAPIAndBaseURL(t *testing.T) {
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	dead := refusedRoot(t)
	junk := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"foo":1}`))
	}))
	t.Cleanup(junk.Close)

	cases := []struct {
		name string
		root string
		step *fakellm.Step // scripted on srv before the call
		nilR bool          // call with a nil request
		// is checks that the failure is the one meant, so each case
		// reaches another place where the adapter builds its error.
		is func(*llm.APIError) bool
	}{
		{name: "http error", root: srv.URL(), step: &fakellm.Step{Error: &fakellm.ErrorReply{Status: 429, Type: "rate_limit_error", Message: "slow down"}},
			is: func(e *llm.APIError) bool { return e.StatusCode == 429 && !e.MidStream }},
		{name: "stream error", root: srv.URL(), step: &fakellm.Step{Text: "partial", StreamError: &fakellm.ErrorReply{Type: "overloaded_error", Message: "Overloaded"}},
			is: func(e *llm.APIError) bool { return e.MidStream && e.Transport == llm.TransportNone && len(e.Body) > 0 }},
		{name: "dropped stream", root: srv.URL(), step: &fakellm.Step{Text: "partial", Drop: true},
			is: func(e *llm.APIError) bool { return e.MidStream && e.Transport != llm.TransportNone }},
		{name: "hangup", root: srv.URL(), step: &fakellm.Step{Hangup: true},
			is: func(e *llm.APIError) bool { return !e.MidStream && e.Transport != llm.TransportNone }},
		{name: "refused", root: dead,
			is: func(e *llm.APIError) bool { return e.Transport == llm.TransportConnect }},
		{name: "not an answer", root: junk.URL,
			is: func(e *llm.APIError) bool { return e.Malformed || e.MidStream }},
		{name: "nil request", root: srv.URL(), nilR: true,
			is: func(e *llm.APIError) bool { return e.StatusCode == 0 && e.Transport == llm.TransportNone }},
	}
	for _, a := range wireAdapters {
		for _, tc := range cases {
			t.Run(a.api+"/"+tc.name, func(t *testing.T) {
				base := a.base(tc.root)
				p := a.build(t, base)
				if tc.step != nil {
					srv.Script(*tc.step)
				}
				req := &llm.Request{Model: "m", Messages: []llm.Message{llm.NewText(llm.RoleUser, "hi")}}
				if tc.nilR {
					req = nil
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, err := llm.Collect(p.Stream(ctx, req), nil)
				var ae *llm.APIError
				if !errors.As(err, &ae) {
					t.Fatalf("error %v (%T); want an *llm.APIError", err, err)
				}
				if !tc.is(ae) {
					t.Fatalf("not the failure meant: %#v", ae)
				}
				if ae.API != a.api || ae.BaseURL != base {
					t.Errorf("APIError API %q BaseURL %q; want %q %q (%v)", ae.API, ae.BaseURL, a.api, base, err)
				}
				if in := failover.InputFromError(err); in.API != a.api || in.BaseURL != base {
					t.Errorf("Input API %q BaseURL %q; want %q %q", in.API, in.BaseURL, a.api, base)
				}
			})
		}
	}
}

// An adapter given no base URL reports the endpoint it calls by default, so
// an unreachable default endpoint is still named.
func TestAdapterErrorsNameDefaultBaseURL(t *testing.T) {
	for _, tc := range []struct {
		p        llm.Provider
		api, url string
	}{
		{openai.NewChat(openai.Config{}), "openai", "https://api.openai.com/v1"},
		{openai.NewResponses(openai.Config{}), "openai-responses", "https://api.openai.com/v1"},
		{anthropic.New(anthropic.Config{}), "anthropic", "https://api.anthropic.com"},
		{mustGemini(t, gemini.Config{}), "gemini", gemini.DefaultBaseURL},
	} {
		// A nil request fails before anything is sent.
		_, err := llm.Collect(tc.p.Stream(context.Background(), nil), nil)
		var ae *llm.APIError
		if !errors.As(err, &ae) || ae.API != tc.api || ae.BaseURL != tc.url {
			t.Errorf("%s: error %#v; want API %q BaseURL %q", tc.api, ae, tc.api, tc.url)
		}
	}
}

func mustGemini(t *testing.T, cfg gemini.Config) llm.Provider {
	t.Helper()
	p, err := gemini.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// refusedRoot is the root URL of a 127.0.0.1 port nothing listens on.
func refusedRoot(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	root := "http://" + ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return root
}
