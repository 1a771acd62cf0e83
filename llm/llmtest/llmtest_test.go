package llmtest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/llmtest"
)

// events renders a stream compactly: one letter per event kind.
func events(t *testing.T, p llm.Provider, req *llm.Request) (string, *llm.Response, error) {
	t.Helper()
	var b strings.Builder
	var final *llm.Response
	for ev, err := range p.Stream(context.Background(), req) {
		if err != nil {
			return b.String(), nil, err
		}
		b.WriteString(map[llm.EventType]string{
			llm.EventReasoningDelta: "r", llm.EventTextDelta: "t", llm.EventToolCallStart: "S",
			llm.EventToolCallDelta: "a", llm.EventDone: "D",
		}[ev.Type])
		if ev.Type == llm.EventDone {
			final = ev.Response
		}
	}
	return b.String(), final, nil
}

func TestStreamPlaysSteps(t *testing.T) {
	p := llmtest.New(
		llmtest.Step{Reasoning: "think", Text: strings.Repeat("x", 20), Calls: []llmtest.Call{llmtest.ToolCall("f", `{"k":"0123456789"}`)}},
		llmtest.Text("done").WithUsage(7, 3),
		llmtest.Truncated("cut"),
	)
	req := &llm.Request{Model: "m", Messages: []llm.Message{llm.NewText(llm.RoleUser, "hi")}}
	kinds, res, err := events(t, p, req)
	if err != nil {
		t.Fatal(err)
	}
	if kinds != "rttSaaD" {
		t.Errorf("events %q", kinds)
	}
	m := res.Message
	if m.Text() != strings.Repeat("x", 20) || m.Reasoning.Text != "think" || len(m.ToolCalls) != 1 ||
		m.ToolCalls[0].ID != "call_1" || m.ToolCalls[0].Arguments != `{"k":"0123456789"}` ||
		res.FinishReason != llm.FinishToolCalls || res.Model != "m" || !res.Usage.Reported || res.Usage.OutputTokens == 0 {
		t.Errorf("response %+v", res)
	}

	req.Messages = append(req.Messages, m)
	if _, res, _ = events(t, p, req); res.Message.Text() != "done" || res.Usage.InputTokens != 7 || res.Usage.OutputTokens != 3 || res.FinishReason != llm.FinishStop {
		t.Errorf("second: %+v", res)
	}
	if _, res, _ = events(t, p, req); res.FinishReason != llm.FinishLength {
		t.Errorf("truncated: %+v", res)
	}

	// Past the script: a non-retryable failure, not a hang or a loop.
	_, _, err = events(t, p, req)
	c := failover.ClassifyError(err)
	if err == nil || !strings.Contains(err.Error(), "no step for call 4") || c.Retryable || c.Fallback {
		t.Errorf("exhausted: %v (%+v)", err, c)
	}

	got := p.Requests()
	if len(got) != 4 || len(got[0].Messages) != 1 || len(got[1].Messages) != 2 || got[1].Messages[1].ToolCalls[0].ID != "call_1" {
		t.Fatalf("requests %+v", got)
	}
	// The record is a copy: later changes to the caller's request do not
	// reach it.
	req.Messages[0].Content[0].Text = "changed"
	if p.Requests()[0].Messages[0].Text() != "hi" {
		t.Error("recorded request aliases the caller's")
	}
}

func TestMidStreamFailure(t *testing.T) {
	p := llmtest.New(llmtest.FailAfter("partial answer", failover.ClassServerError))
	kinds, _, err := events(t, p, &llm.Request{Model: "m"})
	var ae *llm.APIError
	if kinds != "t" || !errors.As(err, &ae) || !ae.MidStream || ae.PartialText != "partial answer" || ae.Provider != "llmtest" || ae.Model != "m" {
		t.Errorf("%q %v %+v", kinds, err, ae)
	}
	if c := failover.ClassifyError(err).Class; c != failover.ClassServerError {
		t.Errorf("class %s", c)
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := llmtest.New(llmtest.Step{Respond: func(ctx context.Context, req *llm.Request) llmtest.Step {
		cancel()
		<-ctx.Done()
		return llmtest.Text("too late")
	}})
	_, err := llm.Collect(p.Stream(ctx, &llm.Request{}), nil)
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.Transport != llm.TransportCanceled || !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if c := failover.ClassifyError(err).Class; c != failover.ClassCanceled {
		t.Errorf("class %s", c)
	}
}

// A consumer that stops early gets no more events and no panic.
func TestEarlyBreak(t *testing.T) {
	p := llmtest.New(llmtest.Text(strings.Repeat("y", 100)))
	n := 0
	for range p.Stream(context.Background(), &llm.Request{}) {
		n++
		break
	}
	if n != 1 || p.Remaining() != 0 {
		t.Errorf("n=%d remaining=%d", n, p.Remaining())
	}
}
