package fakellm

import (
	"encoding/json"
	"strings"
	"testing"
)

// finishes holds the expected finish per API.
type finishes struct{ openai, anthropic string }

func (f finishes) of(api string) string {
	if api == APIOpenAI {
		return f.openai
	}
	return f.anthropic
}

var (
	finishStop  = finishes{"stop", "end_turn"}
	finishTools = finishes{"tool_calls", "tool_use"}
)

// TestStepKinds runs every successful step kind over both APIs, streamed
// and not, through the official SDKs.
func TestStepKinds(t *testing.T) {
	longText := "Hello, wörld — ünïcode ✓ survives chunking: 日本語のテキスト, emoji 🚀🚀, done."
	cases := []struct {
		name          string
		step          Step
		wantText      string
		wantReasoning string
		wantCalls     []Call // IDs checked only when set
		wantFinish    finishes
		wantUsage     *Usage // nil: estimated usage is checked instead
		noUsage       bool
	}{
		{
			name:       "text",
			step:       Text(longText),
			wantText:   longText,
			wantFinish: finishStop,
		},
		{
			name: "multi-call with split arguments",
			step: Calls(
				ToolCall("read_file", `{"path":"docs/a/very/long/path/name.txt"}`),
				Call{ID: "fixed_id_2", Name: "list_dir", Arguments: `{"dir":"src","depth":2,"hidden":false}`},
			),
			wantCalls: []Call{
				{Name: "read_file", Arguments: `{"path":"docs/a/very/long/path/name.txt"}`},
				{ID: "fixed_id_2", Name: "list_dir", Arguments: `{"dir":"src","depth":2,"hidden":false}`},
			},
			wantFinish: finishTools,
		},
		{
			name:       "text and call",
			step:       TextCalls("Let me look at that file first.", ToolCall("read_file", `{"path":"go.mod"}`)),
			wantText:   "Let me look at that file first.",
			wantCalls:  []Call{{Name: "read_file", Arguments: `{"path":"go.mod"}`}},
			wantFinish: finishTools,
		},
		{
			name:          "reasoning",
			step:          Step{Reasoning: "The user greets me; a short greeting back is right.", Text: "Hi there!"},
			wantText:      "Hi there!",
			wantReasoning: "The user greets me; a short greeting back is right.",
			wantFinish:    finishStop,
		},
		{
			name:       "truncated",
			step:       Truncated("The answer is cut off in the mid"),
			wantText:   "The answer is cut off in the mid",
			wantFinish: finishes{"length", "max_tokens"},
		},
		{
			name:       "empty",
			step:       Empty(),
			wantFinish: finishStop,
		},
		{
			name:       "content filter",
			step:       Step{Text: "I can't", Finish: "content_filter"},
			wantText:   "I can't",
			wantFinish: finishes{"content_filter", "refusal"},
		},
		{
			name:       "usage with cache tokens",
			step:       Step{Text: "cached", Usage: &Usage{Input: 100, Output: 7, CacheRead: 50, CacheWrite: 25}},
			wantText:   "cached",
			wantFinish: finishStop,
			wantUsage:  &Usage{Input: 100, Output: 7, CacheRead: 50, CacheWrite: 25},
		},
		{
			name:       "explicit usage",
			step:       Text("x").WithUsage(12, 3),
			wantText:   "x",
			wantFinish: finishStop,
			wantUsage:  &Usage{Input: 12, Output: 3},
		},
		{
			name:       "no usage",
			step:       Step{Text: "no usage here", NoUsage: true},
			wantText:   "no usage here",
			wantFinish: finishStop,
			noUsage:    true,
		},
	}
	for _, tc := range cases {
		for _, m := range allModes {
			t.Run(tc.name+"/"+m.String(), func(t *testing.T) {
				s := newServer(t)
				s.Script(tc.step)
				r, err := call(testCtx(t), s, m, "model-x")
				if err != nil {
					t.Fatalf("call: %v", err)
				}
				if r.text != tc.wantText {
					t.Errorf("text = %q, want %q", r.text, tc.wantText)
				}
				if r.reasoning != tc.wantReasoning {
					t.Errorf("reasoning = %q, want %q", r.reasoning, tc.wantReasoning)
				}
				if m.api == APIAnthropic && tc.wantReasoning != "" && r.signature == "" {
					t.Error("thinking block has no signature")
				}
				if got := r.finish; got != tc.wantFinish.of(m.api) {
					t.Errorf("finish = %q, want %q", got, tc.wantFinish.of(m.api))
				}
				checkCalls(t, m, r, tc.wantCalls)
				if m.stream && len(tc.wantText) > 2*textChunkBytes && r.textDeltas < 2 {
					t.Errorf("text came in %d deltas, want several", r.textDeltas)
				}
				checkUsage(t, s, m, r, tc.step, tc.wantUsage, tc.noUsage)
				if v := s.Violations(); len(v) != 0 {
					t.Errorf("violations: %v", v)
				}
				if s.Pending() != 0 {
					t.Errorf("Pending = %d after the call, want 0", s.Pending())
				}
			})
		}
	}
}

func checkCalls(t *testing.T, m mode, r result, want []Call) {
	t.Helper()
	if len(r.calls) != len(want) {
		t.Fatalf("calls = %+v, want %d calls", r.calls, len(want))
	}
	prefix := "call_"
	if m.api == APIAnthropic {
		prefix = "toolu_"
	}
	ids := map[string]bool{}
	for i, w := range want {
		g := r.calls[i]
		if g.Name != w.Name || g.Arguments != w.Arguments {
			t.Errorf("call %d = %s(%s), want %s(%s)", i, g.Name, g.Arguments, w.Name, w.Arguments)
		}
		switch {
		case w.ID != "" && g.ID != w.ID:
			t.Errorf("call %d id = %q, want %q", i, g.ID, w.ID)
		case w.ID == "" && !strings.HasPrefix(g.ID, prefix):
			t.Errorf("call %d generated id = %q, want prefix %q", i, g.ID, prefix)
		}
		if ids[g.ID] {
			t.Errorf("duplicate call id %q", g.ID)
		}
		ids[g.ID] = true
		if m.stream && len(w.Arguments) > argsChunkBytes && r.argDeltas[i] < 2 {
			t.Errorf("call %d arguments came in %d fragments, want several", i, r.argDeltas[i])
		}
	}
}

func checkUsage(t *testing.T, s *Server, m mode, r result, st Step, want *Usage, none bool) {
	t.Helper()
	if none {
		if r.usage != nil {
			t.Errorf("usage = %+v, want none reported", *r.usage)
		}
		return
	}
	if r.usage == nil {
		t.Fatal("no usage reported")
	}
	if want == nil {
		// The documented estimate: body bytes/4 in, output bytes/4 out.
		reqs := s.Requests()
		est := estimateUsage(reqs[len(reqs)-1], st)
		want = est
		if m.api == APIAnthropic {
			want.Reasoning = 0 // not on Anthropic's wire
		}
		if len(st.Text)+len(st.Calls) > 0 && want.Output < 1 {
			t.Fatalf("estimate gives no output tokens for output")
		}
	}
	if *r.usage != *want {
		t.Errorf("usage = %+v, want %+v", *r.usage, *want)
	}
}

// TestInvalidArguments: arguments that are not valid JSON reach the client
// as they were scripted wherever the wire can carry them.
func TestInvalidArguments(t *testing.T) {
	const args = `{"path": "a.txt", "mode":`
	for _, m := range allModes {
		t.Run(m.String(), func(t *testing.T) {
			s := newServer(t)
			s.Script(Calls(ToolCall("read_file", args)))
			r, err := call(testCtx(t), s, m, "model-x")
			if err != nil {
				t.Fatal(err)
			}
			if len(r.calls) != 1 {
				t.Fatalf("calls = %+v", r.calls)
			}
			want := args
			if m.api == APIAnthropic && !m.stream {
				// A complete message cannot hold broken JSON in "input";
				// it carries the text as a JSON string instead.
				b, _ := json.Marshal(args)
				want = string(b)
			}
			if r.calls[0].Arguments != want {
				t.Errorf("arguments = %q, want %q", r.calls[0].Arguments, want)
			}
		})
	}
}
