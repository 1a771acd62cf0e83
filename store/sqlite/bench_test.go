package sqlite_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/sqlite"
)

// transcriptRow returns a realistic row of a tool-using session: user
// prompts, assistant tool calls, tool results and answers.
func transcriptRow(i int) *store.Message {
	switch i % 4 {
	case 0:
		return &store.Message{TurnID: "t", Message: llm.NewText(llm.RoleUser, fmt.Sprintf("Please look at file %d and fix the bug in it.", i))}
	case 1:
		return &store.Message{TurnID: "t", Message: llm.Message{Role: llm.RoleAssistant,
			ToolCalls: []llm.ToolCall{{ID: fmt.Sprint("call_", i), Name: "read_file", Arguments: fmt.Sprintf(`{"path":"src/f%d.go"}`, i)}}},
			FinishReason: llm.FinishToolCalls, Usage: llm.Usage{InputTokens: 1000, OutputTokens: 40, Reported: true}}
	case 2:
		return &store.Message{TurnID: "t", Message: llm.NewToolResult(llm.ToolCall{ID: fmt.Sprint("call_", i-1), Name: "read_file"},
			fmt.Sprintf("package f\n\nfunc F%d() int {\n\treturn %d\n}\n", i, i), false)}
	default:
		return &store.Message{TurnID: "t", Message: llm.NewText(llm.RoleAssistant, "Fixed: the function now returns the right value."),
			FinishReason: llm.FinishStop}
	}
}

// cpuTime is this process's user+system CPU time. The machine is shared, so
// the benchmarks also report CPU per op, which other load disturbs less
// than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds a cpu-ns/op metric for the loop that began at start.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

func BenchmarkLoad10k(b *testing.B) {
	s := openTemp(b, sqlite.Options{})
	ctx := b.Context()
	if err := s.CreateSession(ctx, &store.Session{ID: "big"}); err != nil {
		b.Fatal(err)
	}
	const n = 10_000
	batch := make([]*store.Message, 0, 500)
	for i := range n {
		batch = append(batch, transcriptRow(i))
		if len(batch) == cap(batch) {
			if err := s.Append(ctx, store.Fence{SessionID: "big"}, batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		got, err := s.Messages(ctx, "big", store.MessageQuery{})
		if err != nil || len(got) != n {
			b.Fatalf("loaded %d rows: %v", len(got), err)
		}
	}
	reportCPU(b, start)
}

// BenchmarkAppend appends one row with a fence check per op. The "prompt"
// case has a 30 KiB system prompt in the session row, which every append
// updates (seq, updated_at): it shows the big row is not rewritten.
func BenchmarkAppend(b *testing.B) {
	for _, bc := range []struct {
		name, sync string
		prompt     int
	}{
		{"synchronous=normal", sqlite.SyncNormal, 0},
		{"synchronous=full", sqlite.SyncFull, 0},
		{"synchronous=normal/prompt=30KiB", sqlite.SyncNormal, 30 << 10},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := openTemp(b, sqlite.Options{Synchronous: bc.sync})
			ctx := b.Context()
			sess := &store.Session{ID: "a", SystemPrompt: strings.Repeat("You are a careful agent. ", bc.prompt/25)}
			if err := s.CreateSession(ctx, sess); err != nil {
				b.Fatal(err)
			}
			l, err := s.AcquireLease(ctx, "a", "bench", time.Hour)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			start := cpuTime()
			for b.Loop() {
				if err := s.Append(ctx, l.Fence(), transcriptRow(i)); err != nil {
					b.Fatal(err)
				}
				i++
			}
			reportCPU(b, start)
		})
	}
}
