package gemini_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/gemini"
)

func newProvider(t *testing.T, srv *fakellm.Server, budget int) *gemini.Provider {
	t.Helper()
	p, err := gemini.New(gemini.Config{Name: "gem", BaseURL: srv.GeminiBaseURL(), APIKey: "k", ThinkingBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func collect(t *testing.T, p llm.Provider, req *llm.Request) ([]llm.Event, *llm.Response, error) {
	t.Helper()
	var evs []llm.Event
	resp, err := llm.Collect(p.Stream(context.Background(), req), func(e llm.Event) { evs = append(evs, e) })
	return evs, resp, err
}

func TestGeminiTextThoughtsUsage(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	srv.Script(fakellm.Step{Reasoning: "A greeting.", Text: "Hello from Gemini, nice to meet you.",
		Usage: &fakellm.Usage{Input: 50, CacheRead: 200, Output: 40, Reasoning: 15}})
	p := newProvider(t, srv, 1024)
	evs, resp, err := collect(t, p, &llm.Request{Model: "gemini-2.5-pro", System: "be brief", Messages: []llm.Message{llm.NewText(llm.RoleUser, "hi")}, MaxTokens: 300})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Text() != "Hello from Gemini, nice to meet you." || resp.FinishReason != llm.FinishStop {
		t.Errorf("answer %q, finish %q", resp.Message.Text(), resp.FinishReason)
	}
	deltas := 0
	for _, e := range evs {
		if e.Type == llm.EventTextDelta {
			deltas++
		}
	}
	if deltas < 2 {
		t.Errorf("%d text deltas; the answer was not streamed", deltas)
	}
	want := llm.Usage{InputTokens: 50, CacheReadTokens: 200, OutputTokens: 40, ReasoningTokens: 15, Reported: true}
	if resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
	if r := resp.Message.Reasoning; r == nil || r.Text != "A greeting." || r.API != "gemini" {
		t.Errorf("reasoning = %+v", r)
	}
	req := srv.Requests()[0]
	if req.API != fakellm.APIGemini || req.Model != "gemini-2.5-pro" || !req.Stream || req.System != "be brief" || req.MaxTokens != 300 || req.ThinkingBudget != 1024 {
		t.Errorf("request = %+v", req)
	}
}

// Parallel function calls come back with a thought signature; the results
// go back in call order (even when stored in another order), matched by
// name, with the signature replayed on the first call.
func TestGeminiFunctionCallsAndSignatures(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	srv.Script(
		fakellm.Step{Calls: []fakellm.Call{fakellm.ToolCall("read", `{"p":"a"}`), fakellm.ToolCall("stat", `{"p":"b"}`)}},
		fakellm.Text("Both done."),
	)
	p := newProvider(t, srv, 0)
	msgs := []llm.Message{llm.NewText(llm.RoleUser, "go")}
	_, resp, err := collect(t, p, &llm.Request{Model: "gemini-3-pro", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Message.ToolCalls
	if len(calls) != 2 || calls[0].Name != "read" || calls[0].Arguments != `{"p":"a"}` || calls[0].ID == calls[1].ID || resp.FinishReason != llm.FinishToolCalls {
		t.Fatalf("calls = %+v (%s)", calls, resp.FinishReason)
	}
	if r := resp.Message.Reasoning; r == nil || len(r.Items) != 1 {
		t.Fatalf("no thought signature kept: %+v", r)
	}
	// Results stored in completion order: stat first.
	msgs = append(msgs, resp.Message, llm.NewToolResult(calls[1], "size 3", false), llm.NewToolResult(calls[0], "alpha", false))
	_, resp, err = collect(t, p, &llm.Request{Model: "gemini-3-pro", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if v := srv.Violations(); len(v) != 0 {
		t.Fatalf("violations: %q", v)
	}
	got := srv.Requests()[1].Messages
	if len(got) != 4 || got[2].ToolCallID != got[1].ToolCalls[0].ID || got[3].ToolCallID != got[1].ToolCalls[1].ID || got[2].Text != "alpha" || got[3].Text != "size 3" {
		t.Errorf("function responses not in call order: %+v", got)
	}
	if len(got[1].Signatures) != 1 || got[1].Signatures[0] == "skip/thought/signature/validator" {
		t.Errorf("the issued signature was not replayed: %+v", got[1])
	}
	// Without the signature (another provider's history) the current
	// turn's call turn carries the skip value; a made-up one is refused.
	msgs[1].Reasoning = nil
	srv.Script(fakellm.Text("ok"))
	if _, _, err := collect(t, p, &llm.Request{Model: "gemini-3-pro", Messages: msgs}); err != nil {
		t.Fatalf("skip value refused: %v", err)
	}
	msgs[1].Reasoning = &llm.Reasoning{API: "gemini", Items: []json.RawMessage{json.RawMessage(`{"on":"call","index":0,"thought_signature":"Zm9yZ2Vk"}`)}}
	_, _, err = collect(t, p, &llm.Request{Model: "gemini-3-pro", Messages: msgs})
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.Contains(ae.Message, "Corrupted thought signature") {
		t.Errorf("forged signature: %v", err)
	}
}

func TestGeminiSafetyAndErrors(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	srv.Script(
		fakellm.Step{Finish: "content_filter"},
		fakellm.Step{Text: "Here is how to", Finish: "content_filter"},
		fakellm.RawError(400, `{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`),
		fakellm.RawError(429, `[{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}]`),
		fakellm.Drop("half an ans"),
		fakellm.Truncated("cut by the limit"),
	)
	p := newProvider(t, srv, 0)
	req := &llm.Request{Model: "gemini-2.5-flash", Messages: []llm.Message{llm.NewText(llm.RoleUser, "hi")}}
	for _, want := range []string{"prompt_blocked:SAFETY", "SAFETY"} {
		_, resp, err := collect(t, p, req)
		if err != nil || resp.FinishReason != llm.FinishContentFilter || resp.RawFinishReason != want {
			t.Errorf("safety block: %+v, %v; want content_filter %s", resp, err, want)
		}
	}
	for _, want := range []failover.Class{failover.ClassContextOverflow, failover.ClassRateLimit} {
		_, _, err := collect(t, p, req)
		var ae *llm.APIError
		if !errors.As(err, &ae) || ae.StatusCode == 0 || len(ae.Body) == 0 {
			t.Fatalf("err = %#v, want an HTTP error with its body", err)
		}
		if c := failover.ClassifyError(err); c.Class != want {
			t.Errorf("class = %s, want %s (%s)", c.Class, want, ae.Body)
		}
	}
	_, _, err := collect(t, p, req)
	var ae *llm.APIError
	if !errors.As(err, &ae) || !ae.MidStream || !strings.Contains(ae.PartialText, "half") {
		t.Errorf("cut stream: %#v", err)
	}
	_, resp, err := collect(t, p, req)
	if err != nil || resp.FinishReason != llm.FinishLength {
		t.Errorf("truncated: %+v %v", resp, err)
	}
}
