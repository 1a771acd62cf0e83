package compact

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

func emRow(role llm.Role, text string) store.Message {
	return store.Message{Message: llm.NewText(role, text)}
}

func emCall(id string) store.Message {
	m := store.Message{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: "fetch", Arguments: `{}`}}}}
	return m
}

func emResult(id, text string) store.Message {
	return store.Message{Message: llm.NewToolResult(llm.ToolCall{ID: id, Name: "fetch"}, text, false)}
}

func TestEmergencyPass(t *testing.T) {
	big := func(tag string, n int) string { return tag + "\n" + strings.Repeat("x", n) + "\nEND-" + tag }
	rows := []store.Message{
		emRow(llm.RoleUser, "old question"), emRow(llm.RoleAssistant, "old answer"),
		emRow(llm.RoleUser, "fetch three"),
		emCall("c1"), emResult("c1", big("R1", 4000)),
		emCall("c2"), emResult("c2", big("R2", 4000)),
		emCall("c3"), emResult("c3", big("R3", 40000)),
	}
	t.Run("keeps the user's message and the newest pair, cut", func(t *testing.T) {
		sum := &fakeSummarizer{text: "## Task\nfetch"}
		c := &Compressor{Summarizer: sum}
		out, err := c.Compress(context.Background(), Input{Rows: rows, Target: 2000, Emergency: true})
		if err != nil {
			t.Fatalf("%v (after %d)", err, out.After)
		}
		var roles []string
		for _, r := range out.Rows {
			roles = append(roles, string(r.Role))
		}
		if got := strings.Join(roles, ","); got != "user,user,assistant,tool" {
			t.Fatalf("rows %s; want the user's message, the summary, the newest call and its result", got)
		}
		if out.Rows[0].Text() != "fetch three" || out.Rows[1].Kind != store.RowSummary || out.Rows[2].ToolCalls[0].ID != "c3" {
			t.Errorf("rows %+v", out.Rows)
		}
		res := out.Rows[3].Text()
		if !strings.HasPrefix(res, "R3\n") || !strings.HasSuffix(res, "END-R3") || !strings.Contains(res, TruncatedMarker) {
			t.Errorf("the newest result is not cut to a head and tail: %.80q…", res)
		}
		if out.After > 2000 || out.Summarized != 6 || sum.calls() != 1 {
			t.Errorf("after %d, summarized %d, summary calls %d", out.After, out.Summarized, sum.calls())
		}
	})
	t.Run("a failed summary still frees the room", func(t *testing.T) {
		c := &Compressor{Summarizer: &fakeSummarizer{err: errors.New("down")}, OnFailure: FailAbort}
		out, err := c.Compress(context.Background(), Input{Rows: rows, Target: 2000, Emergency: true})
		if err != nil || !out.SummaryFailed {
			t.Fatalf("err %v, summary failed %v", err, out.SummaryFailed)
		}
	})
	t.Run("a user message over the target cannot fit", func(t *testing.T) {
		c := &Compressor{Summarizer: &fakeSummarizer{text: "s"}}
		huge := []store.Message{emRow(llm.RoleAssistant, "hi"), emRow(llm.RoleUser, strings.Repeat("word ", 20000)), emCall("c1"), emResult("c1", "ok")}
		huge = append([]store.Message{emRow(llm.RoleUser, "first")}, huge...)
		_, err := c.Compress(context.Background(), Input{Rows: huge, Target: 1000, Emergency: true})
		if !errors.Is(err, ErrCannotFit) {
			t.Fatalf("err %v, want ErrCannotFit", err)
		}
	})
}
