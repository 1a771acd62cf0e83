package turn_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/sqlite"
	"github.com/talaria-agent/talaria/transcript"
)

// resumeMessages is the size of the resumed session.
const resumeMessages = 10_000

// resumeRow is row i of a realistic tool-using session: a user prompt, an
// assistant tool call, a tool result of about 1.2 KB of code, and a short
// answer, in turn.
func resumeRow(i int) *store.Message {
	turnID := fmt.Sprintf("t%d", i/4)
	switch i % 4 {
	case 0:
		return &store.Message{TurnID: turnID, Message: llm.NewText(llm.RoleUser,
			fmt.Sprintf("Please look at internal/pkg%d/file.go and fix the off-by-one in the loop.", i))}
	case 1:
		return &store.Message{TurnID: turnID, Message: llm.Message{Role: llm.RoleAssistant,
			Content:   []llm.Part{llm.TextPart("Let me read the file first.")},
			ToolCalls: []llm.ToolCall{{ID: fmt.Sprint("call_", i), Name: "read_file", Arguments: fmt.Sprintf(`{"path":"internal/pkg%d/file.go"}`, i)}}},
			FinishReason: llm.FinishToolCalls, Usage: llm.Usage{InputTokens: 12000, OutputTokens: 40, Reported: true}}
	case 2:
		var b strings.Builder
		fmt.Fprintf(&b, "package pkg%d\n\n", i)
		for b.Len() < 1200 {
			fmt.Fprintf(&b, "func F%d(xs []int) int {\n\tn := 0\n\tfor i := 0; i <= len(xs); i++ {\n\t\tn += xs[i]\n\t}\n\treturn n\n}\n", b.Len())
		}
		return &store.Message{TurnID: turnID, Message: llm.NewToolResult(
			llm.ToolCall{ID: fmt.Sprint("call_", i-1), Name: "read_file"}, b.String(), false)}
	default:
		return &store.Message{TurnID: turnID, Message: llm.NewText(llm.RoleAssistant,
			"Fixed: the loop ran one step past the end of the slice (i <= len(xs)); it now stops at len(xs)-1. The tests pass."),
			FinishReason: llm.FinishStop}
	}
}

// resumeStore is a SQLite store in a temp dir holding one session of
// resumeMessages rows (and, when archived > 0, that many compressed-away
// rows before them).
func resumeStore(b *testing.B, archived int) (*sqlite.Store, *store.Session) {
	b.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, b.TempDir()+"/state.db", sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	sess := &store.Session{ID: "resume", SystemPrompt: strings.Repeat("You are a careful coding agent. ", 60)}
	if err := st.CreateSession(ctx, sess); err != nil {
		b.Fatal(err)
	}
	l, err := st.AcquireLease(ctx, sess.ID, "bench", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	write := func(n int) {
		batch := make([]*store.Message, 0, 500)
		for i := range n {
			batch = append(batch, resumeRow(i))
			if len(batch) == cap(batch) || i == n-1 {
				if err := st.Append(ctx, l.Fence(), batch...); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
	}
	if archived > 0 {
		write(archived)
		// Archive them the way a compression does, leaving no live rows.
		if err := st.Replace(ctx, l.Fence(), int64(archived)); err != nil {
			b.Fatal(err)
		}
	}
	write(resumeMessages)
	return st, sess
}

// BenchmarkResume10k measures resuming a 10,000-message session the way a
// turn does before its first API call: load the live rows from SQLite
// (loadHistory), project them to the wire with repair (assemble), and
// estimate the request for the preflight gate. Each step is reported
// cumulatively; "archived" adds 10,000 compressed-away rows the load must
// skip. cpu-ns/op is the process's CPU time per op (steadier than wall
// time on a shared machine).
func BenchmarkResume10k(b *testing.B) {
	tools := []llm.ToolSpec{{Name: "read_file", Description: "Read a file.", Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}}
	for _, bc := range []struct {
		name     string
		archived int
		project  bool
		estimate bool
	}{
		{"load", 0, false, false},
		{"load+project", 0, true, false},
		{"load+project+estimate", 0, true, true},
		{"archived/load+project+estimate", resumeMessages, true, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			st, sess := resumeStore(b, bc.archived)
			ctx := context.Background()
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				rows, err := st.Messages(ctx, sess.ID, store.MessageQuery{})
				if err != nil || len(rows) != resumeMessages {
					b.Fatalf("loaded %d rows: %v", len(rows), err)
				}
				if !bc.project {
					continue
				}
				msgs, rep := transcript.Project(rows)
				if rep.Changed() || len(msgs) != resumeMessages {
					b.Fatalf("projection: %d messages, repairs %v", len(msgs), rep)
				}
				if bc.estimate {
					var acct compact.Accountant
					if n := acct.Estimate(&llm.Request{System: sess.SystemPrompt, Messages: msgs, Tools: tools}); n <= 0 {
						b.Fatal("zero estimate")
					}
				}
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
		})
	}
}
