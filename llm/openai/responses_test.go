package openai_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/openai"
)

func responsesProvider(srv *fakellm.Server, mod func(*openai.Config)) *openai.Responses {
	cfg := openai.Config{Name: "resp", BaseURL: srv.OpenAIBaseURL(), APIKey: "k", ReasoningSummary: "auto"}
	if mod != nil {
		mod(&cfg)
	}
	return openai.NewResponses(cfg)
}

func collectAll(t *testing.T, p llm.Provider, req *llm.Request) ([]llm.Event, *llm.Response, error) {
	t.Helper()
	var evs []llm.Event
	resp, err := llm.Collect(p.Stream(context.Background(), req), func(e llm.Event) { evs = append(evs, e) })
	return evs, resp, err
}

func TestResponsesTextReasoningUsage(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	srv.Script(fakellm.Step{Reasoning: "The user greets; greet back.", Text: "Hello there, friend.",
		Usage: &fakellm.Usage{Input: 100, CacheRead: 400, Output: 30, Reasoning: 12}})
	p := responsesProvider(srv, nil)
	evs, resp, err := collectAll(t, p, &llm.Request{Model: "gpt-5", System: "be kind", Messages: []llm.Message{llm.NewText(llm.RoleUser, "hi")}, MaxTokens: 500})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Message.Text(); got != "Hello there, friend." {
		t.Errorf("text = %q", got)
	}
	var reasoning strings.Builder
	deltas := 0
	for _, e := range evs {
		switch e.Type {
		case llm.EventReasoningDelta:
			reasoning.WriteString(e.Text)
		case llm.EventTextDelta:
			deltas++
		}
	}
	if reasoning.String() != "The user greets; greet back." || deltas < 2 {
		t.Errorf("reasoning deltas %q, %d text deltas", reasoning.String(), deltas)
	}
	want := llm.Usage{InputTokens: 100, CacheReadTokens: 400, OutputTokens: 30, ReasoningTokens: 12, Reported: true}
	if resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
	if resp.FinishReason != llm.FinishStop {
		t.Errorf("finish = %q", resp.FinishReason)
	}
	r := resp.Message.Reasoning
	if r == nil || len(r.Items) != 1 || r.API != "openai-responses" || r.Model != "gpt-5" || r.Text != "The user greets; greet back." {
		t.Fatalf("reasoning = %+v", r)
	}
	req := srv.Requests()[0]
	if req.System != "be kind" || req.MaxTokens != 500 || !strings.Contains(string(req.Body), `"store":false`) ||
		!strings.Contains(string(req.Body), `"include":["reasoning.encrypted_content"]`) {
		t.Errorf("request body: %s", req.Body)
	}
}

// A tool turn of three calls replays every reasoning item of the turn, as
// stored, before the output it led to; the next turn prunes them all.
func TestResponsesReasoningReplayBoundary(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	srv.Script(
		fakellm.Step{Reasoning: "List first.", Calls: []fakellm.Call{fakellm.ToolCall("ls", `{}`)}},
		fakellm.Step{Reasoning: "Now read both, in parallel.", Calls: []fakellm.Call{fakellm.ToolCall("read", `{"p":"a"}`), fakellm.ToolCall("read", `{"p":"b"}`)}},
		fakellm.Step{Reasoning: "Summarize.", Text: "a and b say hi."},
		fakellm.Text("Sure."),
		fakellm.Text("The fallback answers."),
		fakellm.Text("Answered without replay."),
	)
	p := responsesProvider(srv, nil)
	msgs := []llm.Message{llm.NewText(llm.RoleUser, "what is in the dir?")}
	var items [][]byte
	for call := 0; call < 3; call++ {
		_, resp, err := collectAll(t, p, &llm.Request{Model: "gpt-5", Messages: msgs})
		if err != nil {
			t.Fatalf("call %d: %v", call, err)
		}
		if resp.Message.Reasoning == nil || len(resp.Message.Reasoning.Items) != 1 {
			t.Fatalf("call %d: reasoning %+v", call, resp.Message.Reasoning)
		}
		items = append(items, resp.Message.Reasoning.Items[0])
		msgs = append(msgs, resp.Message)
		for _, c := range resp.Message.ToolCalls {
			msgs = append(msgs, llm.NewToolResult(c, "result of "+c.Arguments, false))
		}
		if call == 1 && resp.FinishReason != llm.FinishToolCalls || call == 1 && len(resp.Message.ToolCalls) != 2 {
			t.Fatalf("call 1: parallel calls %+v (%s)", resp.Message.ToolCalls, resp.FinishReason)
		}
	}
	reqs := srv.Requests()
	if got := len(reqs[2].ReasoningItems); got != 2 {
		t.Fatalf("third call replayed %d reasoning items, want both of the turn's", got)
	}
	for i, it := range items[:2] {
		if !strings.Contains(string(reqs[2].Body), string(it)) {
			t.Errorf("item %d not replayed byte for byte:\n%s\nin\n%s", i, it, reqs[2].Body)
		}
	}
	// Next turn: everything before the new user message is pruned.
	msgs = append(msgs, llm.NewText(llm.RoleUser, "thanks"))
	if _, _, err := collectAll(t, p, &llm.Request{Model: "gpt-5", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	reqs = srv.Requests()
	if got := reqs[3].ReasoningItems; len(got) != 0 {
		t.Errorf("next turn replayed %v; earlier turns' items must be pruned", got)
	}
	if v := srv.Violations(); len(v) != 0 {
		t.Errorf("violations: %q", v)
	}
	// Another model (a fallback) never gets them, and neither does the
	// same model with the kill switch on.
	mid := msgs[:6] // ends in the second call's tool results
	if _, _, err := collectAll(t, p, &llm.Request{Model: "gpt-5-mini", Messages: mid}); err != nil {
		t.Fatal(err)
	}
	off := responsesProvider(srv, func(c *openai.Config) { c.NoReasoningReplay = true })
	if _, _, err := collectAll(t, off, &llm.Request{Model: "gpt-5", Messages: mid}); err != nil {
		t.Fatal(err)
	}
	reqs = srv.Requests()
	for i, r := range reqs[4:] {
		if len(r.ReasoningItems) != 0 || (i == 1 && strings.Contains(string(r.Body), "encrypted_content")) {
			t.Errorf("request %d replayed reasoning it must not: %v", 4+i, r.ReasoningItems)
		}
	}
}

// Replayed items whose bytes changed (or that another model issued) are
// rejected the way the real API does, and the classifier names the class
// the engine repairs by stripping replay state.
func TestResponsesInvalidEncryptedContent(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	srv.Script(fakellm.Step{Reasoning: "Call it.", Calls: []fakellm.Call{fakellm.ToolCall("ls", `{}`)}})
	p := responsesProvider(srv, nil)
	msgs := []llm.Message{llm.NewText(llm.RoleUser, "go")}
	_, resp, err := collectAll(t, p, &llm.Request{Model: "gpt-5", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	asst := resp.Message
	asst.Reasoning.Items = slices.Clone(asst.Reasoning.Items)
	asst.Reasoning.Items[0] = []byte(strings.Replace(string(asst.Reasoning.Items[0]), "Call it.", "Call it!", 1))
	msgs = append(msgs, asst, llm.NewToolResult(asst.ToolCalls[0], "files", false))
	_, _, err = collectAll(t, p, &llm.Request{Model: "gpt-5", Messages: msgs})
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 400 {
		t.Fatalf("err = %v, want a 400", err)
	}
	if c := failover.ClassifyError(err); c.Class != failover.ClassInvalidEncryptedContent {
		t.Errorf("class = %s, want invalid_encrypted_content (%s)", c.Class, ae.Body)
	}
}

func TestResponsesCutTruncationAndErrors(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	srv.Script(
		fakellm.Drop("half an ans"),
		fakellm.Truncated("cut by the limit"),
		fakellm.Step{Text: "partial", StreamError: &fakellm.ErrorReply{Type: "server_error", Code: "server_error", Message: "The server had an error"}},
		fakellm.HTTPError(429, "requests", "Rate limit reached for gpt-5"),
	)
	p := responsesProvider(srv, nil)
	req := &llm.Request{Model: "gpt-5", Messages: []llm.Message{llm.NewText(llm.RoleUser, "hi")}}
	_, _, err := collectAll(t, p, req)
	var ae *llm.APIError
	if !errors.As(err, &ae) || !ae.MidStream {
		t.Fatalf("cut stream: err = %v, want a mid-stream error", err)
	}
	_, resp, err := collectAll(t, p, req)
	if err != nil || resp.FinishReason != llm.FinishLength || resp.Message.Text() != "cut by the limit" {
		t.Fatalf("truncated: %+v, %v", resp, err)
	}
	_, _, err = collectAll(t, p, req)
	if c := failover.ClassifyError(err); c.Class != failover.ClassServerError {
		t.Errorf("in-stream error: class %s (%v)", c.Class, err)
	}
	_, _, err = collectAll(t, p, req)
	if c := failover.ClassifyError(err); c.Class != failover.ClassRateLimit {
		t.Errorf("429: class %s (%v)", c.Class, err)
	}
}

func compactingProvider(srv *fakellm.Server) *openai.Responses {
	return responsesProvider(srv, func(c *openai.Config) {
		c.NativeCompaction, c.CompactThreshold, c.CompactionHosts = true, 100000, []string{"127.0.0.1"}
	})
}

// Native compaction: sent only to a supporting model on an allowed
// endpoint; the checkpoint the server returns replaces the history before
// it on later calls, across turns, and survives a merge.
func TestResponsesNativeCompaction(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	srv.Script(
		fakellm.Text("no compaction for gpt-5"),
		fakellm.Step{Compact: true, Reasoning: "Compacted; now answer.", Calls: []fakellm.Call{fakellm.ToolCall("ls", `{}`)}},
		fakellm.Text("listed"),
		fakellm.Text("second turn"),
	)
	p := compactingProvider(srv)
	old := []llm.Message{llm.NewText(llm.RoleUser, "an old question"), llm.NewText(llm.RoleAssistant, "an old answer")}
	if _, _, err := collectAll(t, p, &llm.Request{Model: "gpt-5", Messages: old}); err != nil {
		t.Fatal(err)
	}
	msgs := append(old, llm.NewText(llm.RoleUser, "list"))
	_, resp, err := collectAll(t, p, &llm.Request{Model: "gpt-5.5", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.Message.Reasoning; r == nil || len(r.Items) != 2 || !strings.Contains(string(r.Items[0]), `"type":"compaction"`) {
		t.Fatalf("compaction item not kept: %+v", r)
	}
	msgs = append(msgs, resp.Message, llm.NewToolResult(resp.Message.ToolCalls[0], "a b", false))
	if _, _, err := collectAll(t, p, &llm.Request{Model: "gpt-5.5", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	// A continuation merged into the compacting message must not lose the
	// checkpoint (newer reasoning wins, the older checkpoint stays).
	msgs[3].Reasoning = llm.MergeReasoning(msgs[3].Reasoning, &llm.Reasoning{API: "openai-responses", Model: "gpt-5.5", Text: "later"})
	msgs = append(msgs, llm.NewText(llm.RoleAssistant, "listed"), llm.NewText(llm.RoleUser, "next"))
	if _, _, err := collectAll(t, p, &llm.Request{Model: "gpt-5.5", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	if v := srv.Violations(); len(v) != 0 {
		t.Fatalf("violations: %q", v)
	}
	reqs := srv.Requests()
	if reqs[0].CompactThreshold != 0 || reqs[1].CompactThreshold != 100000 {
		t.Errorf("context_management gating: gpt-5 %d, gpt-5.5 %d", reqs[0].CompactThreshold, reqs[1].CompactThreshold)
	}
	for _, i := range []int{2, 3} {
		r := reqs[i]
		if len(r.Checkpoints) != 1 || strings.Contains(string(r.Body), "an old question") {
			t.Errorf("request %d: checkpoints %v; the pruned history must be replaced by it:\n%s", i, r.Checkpoints, r.Body)
		}
	}
	if len(reqs[3].ReasoningItems) != 0 {
		t.Errorf("the previous turn's reasoning was replayed: %v", reqs[3].ReasoningItems)
	}
}

// An endpoint that refuses context_management: the call is retried once
// without it, and native compaction stays off afterwards.
func TestResponsesNativeCompactionRejected(t *testing.T) {
	srv := fakellm.New(fakellm.WithoutContextManagement())
	defer srv.Close()
	srv.Script(fakellm.Text("one"), fakellm.Text("two"))
	p := compactingProvider(srv)
	req := &llm.Request{Model: "gpt-5.5", Messages: []llm.Message{llm.NewText(llm.RoleUser, "hi")}}
	for _, want := range []string{"one", "two"} {
		_, resp, err := collectAll(t, p, req)
		if err != nil || resp.Message.Text() != want {
			t.Fatalf("answer %v, %v; want %q", resp, err, want)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || reqs[0].CompactThreshold == 0 || reqs[1].CompactThreshold != 0 || reqs[2].CompactThreshold != 0 {
		t.Errorf("requests: %d, thresholds %d", len(reqs), []int{reqs[0].CompactThreshold})
	}
}

// A refusal of context_management turns native compaction off for that
// session only: another session on the same provider still sends it.
func TestResponsesNativeCompactionRefusalIsPerSession(t *testing.T) {
	srv := fakellm.New(fakellm.WithoutContextManagement())
	defer srv.Close()
	srv.Script(fakellm.Text("a1"), fakellm.Text("a2"), fakellm.Text("b1"))
	p := compactingProvider(srv)
	msgs := []llm.Message{llm.NewText(llm.RoleUser, "hi")}
	for _, s := range []string{"session-a", "session-a", "session-b"} {
		if _, _, err := collectAll(t, p, &llm.Request{Model: "gpt-5.5", Messages: msgs, Session: s}); err != nil {
			t.Fatal(err)
		}
	}
	var got []int
	for _, r := range srv.Requests() {
		got = append(got, r.CompactThreshold)
	}
	// a1 (refused), a1 again without it, a2 without it, b1 (refused), b1 again.
	if want := []int{100000, 0, 0, 100000, 0}; !slices.Equal(got, want) {
		t.Errorf("thresholds sent = %v, want %v", got, want)
	}
}
