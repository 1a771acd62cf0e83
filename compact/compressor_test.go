package compact

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// pruneTranscript: three exchanges, each reading a large file; the last is
// the protected tail (MinTailMessages 4, anchored at "TAIL-ASK").
func pruneTranscript() []store.Message {
	tr := &transcript{}
	tr.user("HEAD-ASK").call("read_file", big, "h1").say("done 1").
		user("MIDDLE-ASK").call("read_file", big, "m1").say("done 2").
		user("TAIL-ASK").call("read_file", big, "t1").say("final")
	return tr.rows
}

func TestCompressPruneOnly(t *testing.T) {
	rows := pruneTranscript()
	before := estimateRows("sys", rows)
	bigCost := rowCost(&rows[2])
	tests := []struct {
		name       string
		target     int
		wantPruned []int // row indexes
	}{
		{"oldest output first", before - bigCost/2, []int{2}},
		{"until under target", before - bigCost - bigCost/2, []int{2, 6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSummarizer{text: fakeSummary}
			c := &Compressor{Summarizer: f, Model: "aux", MinTailMessages: 4}
			out, err := c.Compress(context.Background(), Input{System: "sys", Rows: rows, Target: tt.target})
			if err != nil {
				t.Fatalf("Compress: %v", err)
			}
			if f.calls() != 0 {
				t.Fatalf("summarizer called %d times; pruning was enough", f.calls())
			}
			if out.Pruned != len(tt.wantPruned) || out.Summarized != 0 || len(out.Rows) != len(rows) {
				t.Fatalf("Pruned=%d Summarized=%d rows=%d, want %d 0 %d", out.Pruned, out.Summarized, len(out.Rows), len(tt.wantPruned), len(rows))
			}
			if out.After > tt.target || out.After >= out.Before || out.Before != before {
				t.Fatalf("Before=%d After=%d target=%d (own estimate %d)", out.Before, out.After, tt.target, before)
			}
			pruned := map[int]bool{}
			for _, i := range tt.wantPruned {
				pruned[i] = true
				text := wireText(&out.Rows[i])
				for _, want := range []string{PrunedPrefix, "read_file", fmt.Sprint(len(wireText(&rows[i]))), "first line of " + rows[i].ToolCallID} {
					if !strings.Contains(text, want) {
						t.Fatalf("row %d marker %q lacks %q", i, text, want)
					}
				}
				if out.Rows[i].ToolCallID != rows[i].ToolCallID || out.Rows[i].ToolName != "read_file" {
					t.Fatalf("row %d lost its pairing: %+v", i, out.Rows[i].Message)
				}
			}
			for i := range out.Rows {
				if !pruned[i] && wireText(&out.Rows[i]) != wireText(&rows[i]) {
					t.Fatalf("row %d changed though not pruned", i)
				}
				if out.Rows[i].ID != 0 || out.Rows[i].Seq != 0 || out.Rows[i].SessionID != "" {
					t.Fatalf("row %d keeps store identity: %d/%d/%q", i, out.Rows[i].ID, out.Rows[i].Seq, out.Rows[i].SessionID)
				}
			}
			if !strings.HasPrefix(wireText(&rows[2]), "first line of h1") {
				t.Fatal("input rows were modified")
			}
			checkPairs(t, out.Rows)
		})
	}
}

// summaryTranscript: a first exchange, ten middle exchanges with tool
// calls, and a last exchange.
func summaryTranscript() []store.Message {
	tr := &transcript{}
	tr.user("HEAD-ASK").say("HEAD-ANSWER")
	for i := range 10 {
		tr.user(fmt.Sprintf("MIDDLE-ASK-%d", i)).call("grep", small, fmt.Sprintf("m%d", i)).say(fmt.Sprintf("MIDDLE-DONE-%d", i))
	}
	tr.user("TAIL-ASK").call("grep", small, "t1").say("TAIL-FINAL")
	return tr.rows
}

func TestCompressSummarize(t *testing.T) {
	rows := summaryTranscript()
	f := &fakeSummarizer{text: fakeSummary}
	c := &Compressor{Summarizer: f, Model: "aux-model", MinTailMessages: 4}
	out, err := c.Compress(context.Background(), Input{System: "sys", Rows: rows, Target: 100})
	if err != nil {
		t.Fatalf("Compress: %v", err)
	}

	want := []string{"HEAD-ASK", "HEAD-ANSWER", "", "TAIL-ASK", "", small("t1"), "TAIL-FINAL"}
	got := texts(out.Rows)
	if len(got) != len(want) {
		t.Fatalf("rows = %q, want %d rows", got, len(want))
	}
	for i, w := range want {
		if i != 2 && got[i] != w {
			t.Fatalf("row %d = %q, want %q", i, got[i], w)
		}
	}
	sum := out.Rows[2]
	if sum.Role != llm.RoleUser || sum.Kind != store.RowSummary || !sum.Synthetic ||
		!strings.HasPrefix(sum.Text(), SummaryMarker) || !strings.Contains(sum.Text(), fakeSummary) {
		t.Fatalf("summary row = %+v", sum)
	}
	if out.Summarized != 40 || out.Pruned != 0 || out.SummaryFailed {
		t.Fatalf("Summarized=%d Pruned=%d SummaryFailed=%v", out.Summarized, out.Pruned, out.SummaryFailed)
	}
	if out.After >= out.Before || out.Usage.OutputTokens != 56 {
		t.Fatalf("Before=%d After=%d Usage=%+v", out.Before, out.After, out.Usage)
	}
	checkPairs(t, out.Rows)

	prompt := f.prompt(t)
	req := f.reqs[0]
	if req.Model != "aux-model" || req.Tools != nil || !strings.Contains(req.System, "## Pending asks") {
		t.Fatalf("summary request: model %q, tools %v, system %q", req.Model, req.Tools, req.System)
	}
	for i := range 10 {
		for _, s := range []string{fmt.Sprintf("### user\nMIDDLE-ASK-%d", i), fmt.Sprintf("MIDDLE-DONE-%d", i), fmt.Sprintf("output of m%d", i), fmt.Sprintf(`→ call grep({"arg":"m%d"})`, i)} {
			if !strings.Contains(prompt, s) {
				t.Fatalf("summary prompt lacks middle text %q", s)
			}
		}
	}
	for _, s := range []string{"HEAD-ASK", "HEAD-ANSWER", "TAIL-ASK", "TAIL-FINAL", "output of t1"} {
		if strings.Contains(prompt, s) {
			t.Fatalf("summary prompt contains head/tail text %q", s)
		}
	}
}

func TestCompressNeverSplitsPairs(t *testing.T) {
	tests := []struct {
		name     string
		build    func(tr *transcript)
		headLen  int
		tailCall []string // ids called by the first tail row
	}{
		{"three results at the tail boundary", func(tr *transcript) {
			tr.user("ASK").call("read", small, "h1").
				call("read", small, "m1").call("read", small, "m2").
				call("read", small, "x", "y", "z").say("FINAL")
		}, 3, []string{"x", "y", "z"}},
		{"three results at the head boundary", func(tr *transcript) {
			tr.user("ASK").call("read", small, "a", "b", "c").
				call("read", small, "m1").call("read", small, "m2").
				call("read", small, "t1").say("FINAL")
		}, 5, []string{"t1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := &transcript{}
			tt.build(tr)
			f := &fakeSummarizer{text: fakeSummary}
			// MinTailMessages 3 alone would start the tail at the second
			// of the three results.
			c := &Compressor{Summarizer: f, MinTailMessages: 3, TailTokens: 1}
			out, err := c.Compress(context.Background(), Input{Rows: tr.rows, Target: 1})
			if err != nil {
				t.Fatalf("Compress: %v", err)
			}
			checkPairs(t, out.Rows)
			if out.Rows[tt.headLen].Kind != store.RowSummary {
				t.Fatalf("row %d is %q, want the summary (rows %q)", tt.headLen, out.Rows[tt.headLen].Kind, texts(out.Rows))
			}
			first := out.Rows[tt.headLen+1]
			var ids []string
			for _, c := range first.ToolCalls {
				ids = append(ids, c.ID)
			}
			if !reflect.DeepEqual(ids, tt.tailCall) {
				t.Fatalf("tail starts with calls %v, want %v", ids, tt.tailCall)
			}
			prompt := f.prompt(t)
			for _, id := range tt.tailCall {
				if strings.Contains(prompt, "output of "+id) {
					t.Fatalf("tail result %q sent to the summarizer", id)
				}
			}
		})
	}
}

func TestCompressKeepsLatestUserMessage(t *testing.T) {
	tr := &transcript{}
	tr.user("FIRST-ASK").say("ok").user("SECOND-ASK").say(pad("ok 2")).user("LATEST-ASK")
	for i := range 8 {
		tr.call("shell", small, fmt.Sprintf("s%d", i))
	}
	tr.say("DONE")
	f := &fakeSummarizer{text: fakeSummary}
	c := &Compressor{Summarizer: f, MinTailMessages: 2, TailTokens: 1}
	out, err := c.Compress(context.Background(), Input{Rows: tr.rows, Target: 1})
	if err != nil {
		t.Fatalf("Compress: %v", err)
	}
	got := texts(out.Rows)
	if got[0] != "FIRST-ASK" || out.Rows[2].Kind != store.RowSummary || got[3] != "LATEST-ASK" || len(out.Rows) != 3+1+8*2+1 {
		t.Fatalf("rows = %q", got)
	}
	prompt := f.prompt(t)
	if !strings.Contains(prompt, "SECOND-ASK") || strings.Contains(prompt, "LATEST-ASK") {
		t.Fatalf("summary prompt = %q", prompt)
	}
}

func TestCompressSyntheticRowsAreNotTheUser(t *testing.T) {
	tests := []struct {
		name string
		tail func(tr *transcript) // rows after LATEST-ASK
	}{
		{"nudge", func(tr *transcript) { tr.engine(store.RowNudge, "NUDGE: please continue") }},
		{"notice", func(tr *transcript) { tr.engine(store.RowNotice, "NOTICE: budget nearly spent") }},
		{"legacy nudge without the synthetic flag", func(tr *transcript) {
			tr.add(store.Message{Message: llm.NewText(llm.RoleUser, "NUDGE: legacy"), Kind: store.RowNudge})
		}},
		{"synthetic plain row", func(tr *transcript) {
			tr.add(store.Message{Message: llm.NewText(llm.RoleUser, "SYNTHETIC: continue"), Synthetic: true})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is not the anchor", func(t *testing.T) {
			tr := &transcript{}
			tr.user("FIRST").say("ok").user("MIDDLE-ASK").say(pad("m")).user("LATEST-ASK")
			tr.call("shell", small, "s1").call("shell", small, "s2")
			tt.tail(tr)
			tr.say("FINAL")
			f := &fakeSummarizer{text: fakeSummary}
			c := &Compressor{Summarizer: f, MinTailMessages: 2, TailTokens: 1}
			out, err := c.Compress(context.Background(), Input{Rows: tr.rows, Target: 1})
			if err != nil {
				t.Fatalf("Compress: %v", err)
			}
			if got := texts(out.Rows); out.Rows[2].Kind != store.RowSummary || got[3] != "LATEST-ASK" {
				t.Fatalf("rows = %q, want the tail to start at LATEST-ASK", got)
			}
			if strings.Contains(f.prompt(t), "LATEST-ASK") {
				t.Fatal("the latest real ask was summarized")
			}
		})
	}

	t.Run("synthetic rows in the middle are labelled", func(t *testing.T) {
		tr := &transcript{}
		tr.user("FIRST").say("ok").engine(store.RowNudge, "NUDGE-IN-MIDDLE").say(pad("m")).
			engine(store.RowFailure, "FAILURE-ROW").user("LATEST").say("final")
		f := &fakeSummarizer{text: fakeSummary}
		c := &Compressor{Summarizer: f, MinTailMessages: 2}
		if _, err := c.Compress(context.Background(), Input{Rows: tr.rows, Target: 1}); err != nil {
			t.Fatalf("Compress: %v", err)
		}
		prompt := f.prompt(t)
		for _, s := range []string{"### engine note (not from the user)\nNUDGE-IN-MIDDLE", "### engine note (not from the user)\nFAILURE-ROW"} {
			if !strings.Contains(prompt, s) {
				t.Fatalf("prompt lacks %q:\n%s", s, prompt)
			}
		}
		if strings.Contains(prompt, "### user\nNUDGE") {
			t.Fatal("nudge labelled as the user")
		}
	})
}

func TestCompressMergesPreviousSummary(t *testing.T) {
	prev := summaryRow("PREVIOUS-SUMMARY-BODY")
	tests := []struct {
		name  string
		build func(tr *transcript)
		kept  []string // texts before the new summary
	}{
		{"after the head", func(tr *transcript) {
			tr.user("FIRST-ASK").say("first answer").add(prev)
			tr.user("SECOND-ASK").say(pad("second")).user("LATEST-ASK").say("latest")
		}, []string{"FIRST-ASK", "first answer"}},
		{"at the start", func(tr *transcript) {
			tr.add(prev).user("SECOND-ASK").say(pad("second")).user("LATEST-ASK").say("latest")
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := &transcript{}
			tt.build(tr)
			f := &fakeSummarizer{text: fakeSummary}
			c := &Compressor{Summarizer: f, MinTailMessages: 2}
			out, err := c.Compress(context.Background(), Input{Rows: tr.rows, Target: 1})
			if err != nil {
				t.Fatalf("Compress: %v", err)
			}
			prompt := f.prompt(t)
			if !strings.Contains(prompt, "<previous-summary>\nPREVIOUS-SUMMARY-BODY\n</previous-summary>") ||
				!strings.Contains(prompt, "### user\nSECOND-ASK") || strings.Contains(prompt, SummaryMarker) {
				t.Fatalf("prompt = %q", prompt)
			}
			summaries := 0
			for _, r := range out.Rows {
				if r.Kind == store.RowSummary {
					summaries++
					if strings.Contains(r.Text(), "PREVIOUS-SUMMARY-BODY") {
						t.Fatal("old summary kept next to the new one")
					}
				}
			}
			got := texts(out.Rows)
			if summaries != 1 || out.Summarized != 3 || !slices.Equal(got[:len(tt.kept)], tt.kept) || got[len(got)-2] != "LATEST-ASK" {
				t.Fatalf("summaries=%d Summarized=%d rows=%q", summaries, out.Summarized, got)
			}
		})
	}
}

func TestCompressSummaryFailure(t *testing.T) {
	apiErr := &llm.APIError{Provider: "aux", StatusCode: 500, Message: "boom"}
	tests := []struct {
		name      string
		sum       Summarizer
		mode      FailureMode
		wantErr   bool
		wantCause error
	}{
		{"error gives placeholder", &fakeSummarizer{err: apiErr}, "", false, nil},
		{"empty text gives placeholder", &fakeSummarizer{text: "  \n"}, FailPlaceholder, false, nil},
		{"no summarizer gives placeholder", nil, FailPlaceholder, false, nil},
		{"error aborts", &fakeSummarizer{err: apiErr}, FailAbort, true, apiErr},
		{"empty text aborts", &fakeSummarizer{text: ""}, FailAbort, true, errEmptySummary},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := summaryTranscript()
			c := &Compressor{Summarizer: tt.sum, OnFailure: tt.mode, MinTailMessages: 4}
			out, err := c.Compress(context.Background(), Input{Rows: rows, Target: 100})
			if tt.wantErr {
				if !errors.Is(err, ErrSummaryFailed) || !errors.Is(err, tt.wantCause) || out.Rows != nil {
					t.Fatalf("err = %v, rows = %d; want ErrSummaryFailed wrapping %v and no rows", err, len(out.Rows), tt.wantCause)
				}
				var ae *llm.APIError
				if tt.wantCause == apiErr && (!errors.As(err, &ae) || ae.StatusCode != 500) {
					t.Fatalf("err %v does not unwrap to the APIError", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Compress: %v", err)
			}
			sum := out.Rows[2]
			if !out.SummaryFailed || sum.Kind != store.RowSummary || !strings.HasPrefix(sum.Text(), SummaryMarker) ||
				!strings.Contains(sum.Text(), "40 earlier messages were removed") {
				t.Fatalf("SummaryFailed=%v summary=%q", out.SummaryFailed, sum.Text())
			}
		})
	}
}

func TestCompressTimeout(t *testing.T) {
	tests := []struct {
		name       string
		mode       FailureMode
		cancelCtx  bool
		wantErr    []error
		wantFailed bool
	}{
		{"timeout gives placeholder", FailPlaceholder, false, nil, true},
		{"timeout aborts", FailAbort, false, []error{ErrSummaryFailed, context.DeadlineExceeded}, false},
		{"cancelled turn is never a placeholder", FailPlaceholder, true, []error{context.Canceled}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSummarizer{block: true}
			timeout := 50 * time.Millisecond
			if tt.cancelCtx {
				timeout = time.Hour
			}
			c := &Compressor{Summarizer: f, Timeout: timeout, OnFailure: tt.mode, MinTailMessages: 4}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancelCtx {
				time.AfterFunc(50*time.Millisecond, cancel)
			}
			type result struct {
				out Output
				err error
			}
			done := make(chan result, 1)
			go func() {
				out, err := c.Compress(ctx, Input{Rows: summaryTranscript(), Target: 100})
				done <- result{out, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Compress did not return within 10s of its deadline")
			}
			for _, want := range tt.wantErr {
				if !errors.Is(r.err, want) {
					t.Fatalf("err = %v, want it to wrap %v", r.err, want)
				}
			}
			if tt.wantErr == nil && r.err != nil {
				t.Fatalf("Compress: %v", r.err)
			}
			if r.out.SummaryFailed != tt.wantFailed || (r.err != nil && r.out.Rows != nil) {
				t.Fatalf("SummaryFailed=%v rows=%d", r.out.SummaryFailed, len(r.out.Rows))
			}
			if f.calls() != 1 {
				t.Fatalf("summarizer calls = %d, want 1", f.calls())
			}
		})
	}
}

func TestCompressNoProgress(t *testing.T) {
	tr := &transcript{}
	tr.user("ASK").say("a").user("tiny").say("b").user("LATEST").say("c")
	f := &fakeSummarizer{text: strings.Repeat("a verbose summary ", 2000)}
	c := &Compressor{Summarizer: f, MinTailMessages: 2}
	out, err := c.Compress(context.Background(), Input{Rows: tr.rows, Target: 1})
	if !errors.Is(err, ErrNoProgress) || out.Rows != nil || out.After < out.Before {
		t.Fatalf("err=%v rows=%d Before=%d After=%d; want ErrNoProgress", err, len(out.Rows), out.Before, out.After)
	}
}

func TestCompressTargetAndForce(t *testing.T) {
	rows := pruneTranscript()
	before := estimateRows("", rows)
	tests := []struct {
		name       string
		in         Input
		wantErr    error
		wantCalls  int
		wantPruned int
	}{
		{"under target is not compressed", Input{Rows: rows, Target: before + 1000}, ErrUnderTarget, 0, 0},
		// The head's output is pruned, the middle's summarized.
		{"force compresses under target", Input{Rows: rows, Target: before + 1000, Force: true}, nil, 1, 1},
		{"force prunes everything eligible", Input{Rows: rows, Target: before - 10, Force: true}, nil, 1, 1},
		{"nothing at all", Input{Rows: rows[:1], Target: 1}, ErrNothingToCompress, 0, 0},
		{"only a tail", Input{Rows: rows[8:], Target: 1}, ErrNothingToCompress, 0, 0},
		{"empty transcript", Input{Target: 1}, ErrNothingToCompress, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSummarizer{text: fakeSummary}
			c := &Compressor{Summarizer: f, MinTailMessages: 4}
			out, err := c.Compress(context.Background(), tt.in)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if f.calls() != tt.wantCalls || out.Pruned != tt.wantPruned {
				t.Fatalf("calls=%d Pruned=%d, want %d %d", f.calls(), out.Pruned, tt.wantCalls, tt.wantPruned)
			}
			if err != nil && out.Rows != nil {
				t.Fatal("rows returned with an error")
			}
			if err == nil {
				checkPairs(t, out.Rows)
				if !containsText(out.Rows, "TAIL-ASK") || containsText(out.Rows, "MIDDLE-ASK") {
					t.Fatalf("rows = %q", texts(out.Rows))
				}
			}
		})
	}
}

func TestCompressMeasuredScalesEstimates(t *testing.T) {
	rows := summaryTranscript()
	own := estimateRows("", rows)
	tests := []struct {
		name     string
		measured int
		wantErr  error
	}{
		{"own estimate says it fits", 0, ErrUnderTarget},
		{"provider count says it does not", own * 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Compressor{Summarizer: &fakeSummarizer{text: fakeSummary}, MinTailMessages: 4}
			out, err := c.Compress(context.Background(), Input{Rows: rows, Target: own, Measured: tt.measured})
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.measured > 0 && (out.Before != tt.measured || out.After >= own) {
				t.Fatalf("Before=%d After=%d, want Before=%d and After under %d", out.Before, out.After, tt.measured, own)
			}
		})
	}
}

func TestCompressCopiesKeepFields(t *testing.T) {
	rich := store.Message{
		TurnID: "turn-9",
		Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Part{llm.TextPart("")},
			Reasoning: &llm.Reasoning{Text: "thinking", Signature: "sig"}},
		APIContent:   "[response interrupted]",
		Kind:         store.RowInterrupted,
		FinishReason: llm.FinishLength,
		Usage:        llm.Usage{InputTokens: 10, OutputTokens: 2, Reported: true},
		Provider:     "anthropic",
		Model:        "claude-sonnet-4-5",
		CreatedAt:    time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC),
	}
	tr := &transcript{}
	tr.user("ASK").say("a").user("mid").say(pad("b")).user("LATEST").add(rich)
	c := &Compressor{Summarizer: &fakeSummarizer{text: fakeSummary}, MinTailMessages: 2}
	out, err := c.Compress(context.Background(), Input{Rows: tr.rows, Target: 1})
	if err != nil {
		t.Fatalf("Compress: %v", err)
	}
	got := out.Rows[len(out.Rows)-1]
	want := tr.rows[len(tr.rows)-1]
	want.ID, want.Seq, want.SessionID = 0, 0, ""
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("copy = %+v\nwant %+v", got, want)
	}
	got.Content[0].Text = "changed"
	got.Reasoning.Text = "changed"
	if tr.rows[len(tr.rows)-1].Content[0].Text != "" || tr.rows[len(tr.rows)-1].Reasoning.Text != "thinking" {
		t.Fatal("copy shares memory with the input")
	}
}

func TestCompressPrunesThenSummarizes(t *testing.T) {
	rows := pruneTranscript()
	f := &fakeSummarizer{text: fakeSummary}
	c := &Compressor{Summarizer: f, MinTailMessages: 4, MaxSummaryInput: 5000}
	out, err := c.Compress(context.Background(), Input{Rows: rows, Target: 1})
	if err != nil {
		t.Fatalf("Compress: %v", err)
	}
	// Head output pruned, middle summarized (its pruned output is not
	// counted: it is gone), tail output untouched.
	if out.Pruned != 1 || out.Summarized != 5 || len(out.Rows) != 3+1+4 {
		t.Fatalf("Pruned=%d Summarized=%d rows=%q", out.Pruned, out.Summarized, texts(out.Rows))
	}
	if !strings.HasPrefix(wireText(&out.Rows[2]), PrunedPrefix) || wireText(&out.Rows[len(out.Rows)-2]) != big("t1") {
		t.Fatalf("rows = %q", texts(out.Rows))
	}
	// The summarizer reads the middle's output as it was (clipped), not the
	// prune marker.
	prompt := f.prompt(t)
	if strings.Contains(prompt, PrunedPrefix) || !strings.Contains(prompt, "first line of m1\nlorem ipsum") ||
		!strings.Contains(prompt, "bytes omitted") {
		t.Fatalf("prompt = %q", prompt)
	}
}
