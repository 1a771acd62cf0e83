package turn_test

import (
	"net"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/anthropic"
	"github.com/talaria-agent/talaria/llm/openai"
	"github.com/talaria-agent/talaria/turn"
)

// deadRoute points route r at a 127.0.0.1 port nothing listens on, and
// returns the base URL its adapter was given.
func deadRoute(t *testing.T, r *turn.Route, api string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if api == "anthropic" {
		r.Provider = anthropic.New(anthropic.Config{Name: "dead", BaseURL: base, APIKey: "k"})
		return base
	}
	r.Provider = openai.NewChat(openai.Config{Name: "dead", BaseURL: base + "/v1", APIKey: "k"})
	return base + "/v1"
}

// A refused connection is retried once, not MaxRetries times: nothing
// listens there, and waiting out backoff only delays the error (or the
// fallback).
func TestRefusedConnectionRetriedOnce(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api+"/alone", func(t *testing.T) {
			var base string
			env := testenv.New(t, testenv.Options{API: api, Configure: func(c *agent.Config) {
				c.Limits.MaxRetries = 5
				base = deadRoute(t, &c.Routes[0], api)
			}})
			res := env.Run("hi")
			if res.Exit != turn.ExitFailed || res.Failure == nil {
				t.Fatalf("exit %s, failure %+v", res.Exit, res.Failure)
			}
			if res.APICalls != 2 {
				t.Errorf("%d API calls; want 2 (the call and one retry)", res.APICalls)
			}
			if !res.Failure.Retryable || res.Failure.Provider != "dead" {
				t.Errorf("failure = %+v", res.Failure)
			}
			// Typed, for the CLI and the gateway to read without parsing.
			if f := res.Failure; f.Class != failover.ClassTimeout || f.Transport != llm.TransportConnect || f.Connect != llm.ConnectRefused {
				t.Errorf("failure class %s transport %q connect %q; want timeout over a refused connection", f.Class, f.Transport, f.Connect)
			}
			// It says what happened, not "timed out or dropped".
			for _, want := range []string{"Could not connect to dead at " + base, "connection refused", "base URL"} {
				if !strings.Contains(res.Failure.Message, want) {
					t.Errorf("failure message lacks %q: %s", want, res.Failure.Message)
				}
			}
		})
		t.Run(api+"/falls back", func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api, Fallbacks: []string{"fb-model"}, Configure: func(c *agent.Config) {
				deadRoute(t, &c.Routes[0], api)
			}})
			env.Srv.ScriptModel("fb-model", fakellm.Text("answered by the fallback"))
			res := env.Run("hi")
			if res.Exit != turn.ExitCompleted || res.FinalText != "answered by the fallback" {
				t.Fatalf("exit %s, text %q, failure %+v", res.Exit, res.FinalText, res.Failure)
			}
			if len(res.Routes) != 2 || res.Routes[0].Calls != 2 || res.Routes[1].Calls != 1 {
				t.Errorf("routes = %+v; want 2 calls to the dead route, then 1 to the fallback", res.Routes)
			}
			env.NoViolations()
		})
	}
}
