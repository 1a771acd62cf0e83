package turn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/catalogue"
	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// countingTool is a read-only tool "save" that counts its runs.
func countingTool(runs *atomic.Int32) tool.Tool {
	return testenv.MustFunc(tool.Info{Name: "save", Description: "Save content.", ReadOnly: true,
		Parameters: testenv.ObjectSchema(`{"content":{"type":"string"}}`, "content")},
		func(context.Context, json.RawMessage) (tool.Result, error) {
			runs.Add(1)
			return tool.Result{Content: "saved"}, nil
		})
}

// withCap gives test-model a 16000-token output ceiling and asks for 1000.
func withCap(c *agent.Config) {
	c.Catalogue = catalogue.New(map[string]catalogue.Model{"test-model": {MaxOutput: 16000}})
	c.Limits.MaxTokens = 1000
}

func lastUser(r fakellm.Request) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Text
		}
	}
	return ""
}

// A tool call cut off by the output limit never runs and is asked for again
// at most three times, each with a note saying it was cut and a raised cap;
// the fourth cut ends the turn as tool_call_truncated instead of burning
// the iteration budget. A smaller call after one cut runs normally.
func TestTruncatedToolCall(t *testing.T) {
	cut := fakellm.Step{Calls: []fakellm.Call{fakellm.ToolCall("save", `{"content":"a very long file that goes on and on`)}, Finish: "length"}
	for _, api := range testenv.APIs {
		t.Run("always cut/"+api, func(t *testing.T) {
			if api == "gemini" {
				t.Skip("gemini: function call args arrive as a whole JSON object; a call cannot be cut mid-arguments")
			}
			var runs atomic.Int32
			env := testenv.New(t, testenv.Options{API: api, NoBuiltins: true,
				ExtraTools: []tool.Tool{countingTool(&runs)}, Configure: withCap})
			env.Srv.SetDefault(func(fakellm.Request) fakellm.Step { return cut })
			res := env.Run("write the file")
			if res.Exit != turn.ExitFailed || res.Failure == nil || res.Failure.Reason() != "tool_call_truncated" {
				t.Fatalf("exit %s failure %+v; want failed tool_call_truncated", res.Exit, res.Failure)
			}
			if res.APICalls != 4 || runs.Load() != 0 {
				t.Fatalf("%d calls, %d tool runs; want 4 calls and no run", res.APICalls, runs.Load())
			}
			if !strings.Contains(res.Failure.Message, "max_tokens") || !strings.Contains(res.Failure.Message, "smaller") {
				t.Errorf("message %q does not say what to do", res.Failure.Message)
			}
			reqs := env.Srv.Requests()
			if got := []int{reqs[0].MaxTokens, reqs[1].MaxTokens, reqs[2].MaxTokens, reqs[3].MaxTokens}; !slices.Equal(got, []int{1000, 2000, 4000, 8000}) {
				t.Errorf("max_tokens per request %v; want the cap doubled each retry", got)
			}
			for i, r := range reqs[1:] {
				if !strings.Contains(lastUser(r), turn.TruncatedCallNudgePrefix) {
					t.Errorf("retry %d does not tell the model its call was cut: %q", i+1, lastUser(r))
				}
				if n := strings.Count(requestText(r.Messages), turn.TruncatedCallNudgePrefix); n != 1 {
					t.Errorf("retry %d carries the note %d times", i+1, n)
				}
			}
			for _, r := range env.Rows() {
				if len(r.ToolCalls) > 0 || r.Role == llm.RoleTool || strings.Contains(r.Text(), turn.TruncatedCallNudgePrefix) {
					t.Errorf("the cut call or its note stayed in the transcript: %+v", r.Message)
				}
			}
			env.NoViolations()
		})
		t.Run("cut once/"+api, func(t *testing.T) {
			var runs atomic.Int32
			env := testenv.New(t, testenv.Options{API: api, NoBuiltins: true,
				ExtraTools: []tool.Tool{countingTool(&runs)}, Configure: withCap})
			env.Srv.Script(cut, fakellm.Calls(fakellm.ToolCall("save", `{"content":"part 1"}`)), fakellm.Text("Saved in parts."))
			res := env.Run("write the file")
			if res.Exit != turn.ExitCompleted || res.APICalls != 3 || runs.Load() != 1 {
				t.Fatalf("exit %s, %d calls, %d runs; want completed after 3 calls and 1 run", res.Exit, res.APICalls, runs.Load())
			}
			for _, r := range env.Rows() {
				if r.Kind == store.RowNudge || strings.Contains(r.Text(), turn.TruncatedCallNudgePrefix) {
					t.Errorf("the note stayed in the transcript: %q", r.Text())
				}
			}
			env.NoViolations()
		})
	}
}

// Inline thinking tags are reasoning, never answer text; an answer the
// output limit cut while it was only thinking ends after one call saying
// so, where it used to be continued four times with the same <think> block
// stitched into the final answer.
func TestThinkingOnlyAnswers(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run("inline tags split/"+api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api})
			env.Srv.Script(fakellm.Text("<think>The user wants 2+2. That is 4.</think>\n\nThe answer is 4."))
			res := env.Run("what is 2+2?")
			if res.Exit != turn.ExitCompleted || res.FinalText != "The answer is 4." {
				t.Fatalf("exit %s final %q; want the answer without its thinking", res.Exit, res.FinalText)
			}
			rows := env.Rows()
			ans := rows[len(rows)-1]
			if ans.Reasoning.Empty() || !strings.Contains(ans.Reasoning.Text, "That is 4.") || strings.Contains(ans.Text(), "think") {
				t.Errorf("stored answer %q reasoning %+v", ans.Text(), ans.Reasoning)
			}
			env.NoViolations()
		})
		t.Run("template-opened block, only the close tag streams/"+api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api})
			env.Srv.Script(fakellm.Text("The user wants 2+2. That is 4.\n</think>\n\nThe answer is 4."))
			res := env.Run("what is 2+2?")
			if res.Exit != turn.ExitCompleted || res.FinalText != "The answer is 4." {
				t.Fatalf("exit %s final %q", res.Exit, res.FinalText)
			}
			env.NoViolations()
		})
		t.Run("a continuation that only thinks keeps the answer so far/"+api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api})
			thinking := fakellm.Step{Text: "<think>more pondering", Finish: "length"}
			env.Srv.Script(fakellm.Truncated("The first part of the answer"), thinking, thinking, thinking)
			res := env.Run("write it")
			if res.APICalls != 2 || res.Exit != turn.ExitCompleted || !res.Truncated || res.FinalText != "The first part of the answer" {
				t.Fatalf("exit %s after %d calls, truncated %v, final %q", res.Exit, res.APICalls, res.Truncated, res.FinalText)
			}
			env.NoViolations()
		})
		for name, step := range map[string]fakellm.Step{
			"inline tags":     {Text: "<think>Let me consider every option in turn, first", Finish: "length"},
			"reasoning field": {Reasoning: "Let me consider every option in turn, first", Finish: "length"},
		} {
			t.Run("cut while "+name+"/"+api, func(t *testing.T) {
				env := testenv.New(t, testenv.Options{API: api})
				env.Srv.Script(step, step, step, step, step)
				res := env.Run("plan it")
				if res.APICalls != 1 || res.Exit != turn.ExitFailed || res.Failure == nil || res.Failure.Reason() != "reasoning_exhausted_output" {
					t.Fatalf("exit %s after %d calls, failure %+v; want one call ending reasoning_exhausted_output", res.Exit, res.APICalls, res.Failure)
				}
				if strings.Contains(res.FinalText, "think") || !strings.Contains(res.Failure.Message, "max_tokens") {
					t.Errorf("final %q message %q", res.FinalText, res.Failure.Message)
				}
				env.NoViolations()
			})
		}
	}
}

// A "stop" answer that ends mid-sentence right after tool results is
// continued once and stitched; a complete one after tool results, or a
// mid-sentence one that does not follow tool results, is taken as it is.
func TestStopMidSentenceAfterTools(t *testing.T) {
	read := fakellm.Calls(fakellm.ToolCall("list_dir", `{}`))
	cutText := "I listed the directory. The main configuration file is confi"
	tests := []struct {
		name      string
		steps     []fakellm.Step
		want      string
		wantCalls int
	}{
		{"cut after tools is continued once", []fakellm.Step{read, fakellm.Text(cutText), fakellm.Text("g.yaml, which holds the settings.")},
			cutText + "\ng.yaml, which holds the settings.", 3},
		{"only once per turn", []fakellm.Step{read, fakellm.Text(cutText), fakellm.Text("and the other file is rea")},
			cutText + "\nand the other file is rea", 3},
		{"complete after tools", []fakellm.Step{read, fakellm.Text("The directory is empty.")}, "The directory is empty.", 2},
		{"cut without tools", []fakellm.Step{fakellm.Text(cutText)}, cutText, 1},
	}
	for _, tc := range tests {
		for _, api := range testenv.APIs {
			t.Run(tc.name+"/"+api, func(t *testing.T) {
				env := testenv.New(t, testenv.Options{API: api})
				env.Srv.Script(tc.steps...)
				res := env.Run("what is in the directory?")
				if res.Exit != turn.ExitCompleted || res.FinalText != tc.want || res.APICalls != tc.wantCalls {
					t.Fatalf("exit %s final %q after %d calls; want %q after %d", res.Exit, res.FinalText, res.APICalls, tc.want, tc.wantCalls)
				}
				if tc.wantCalls == 3 {
					if last := env.Srv.Requests()[2].Messages; last[len(last)-1].Text != turn.LengthContinueNudge {
						t.Errorf("the continuation request does not ask to continue: %+v", last[len(last)-1])
					}
				}
				rows := env.Rows()
				if got := rows[len(rows)-1]; got.Role != llm.RoleAssistant || got.Text() != tc.want || got.Synthetic {
					t.Errorf("settled answer %q synthetic=%v", got.Text(), got.Synthetic)
				}
				for _, r := range rows {
					if r.Kind == store.RowNudge {
						t.Errorf("nudge left in the transcript: %q", r.Text())
					}
				}
				env.NoViolations()
			})
		}
	}
}

// A stream that dies inside a large tool call's arguments is retried with a
// note telling the model its call was too large to arrive and to split it;
// one that dies in a small call, or in text, is resent as it was.
func TestStreamCutInsideLargeToolCall(t *testing.T) {
	big := `{"content":"` + strings.Repeat("line of the file\n", 400) + `"}`
	tests := []struct {
		name     string
		args     string
		wantNote bool
	}{
		{"large call", big, true},
		{"small call", `{"content":"short"}`, false},
	}
	for _, tc := range tests {
		for _, api := range testenv.APIs {
			t.Run(tc.name+"/"+api, func(t *testing.T) {
				if api == "gemini" && tc.wantNote {
					t.Skip("gemini: a turn's function calls arrive whole in one chunk; a stream cannot die inside one")
				}
				var runs atomic.Int32
				env := testenv.New(t, testenv.Options{API: api, NoBuiltins: true, ExtraTools: []tool.Tool{countingTool(&runs)}})
				env.Srv.Script(
					fakellm.Step{Calls: []fakellm.Call{fakellm.ToolCall("save", tc.args)}, Drop: true}.WithHeader("retry-after-ms", "1"),
					fakellm.Calls(fakellm.ToolCall("save", `{"content":"part 1"}`)),
					fakellm.Text("Saved."))
				res := env.Run("save the file")
				if res.Exit != turn.ExitCompleted || runs.Load() != 1 {
					t.Fatalf("exit %s, %d runs, failure %+v", res.Exit, runs.Load(), res.Failure)
				}
				reqs := env.Srv.Requests()
				noted := strings.Contains(lastUser(reqs[1]), turn.CutInTransitNudgePrefix)
				if noted != tc.wantNote {
					t.Fatalf("retry carries the split note: %v, want %v (%q)", noted, tc.wantNote, lastUser(reqs[1]))
				}
				if !tc.wantNote && !slices.EqualFunc(reqs[0].Messages, reqs[1].Messages, sameMsg) {
					t.Errorf("the retry is not the identical request")
				}
				for _, r := range env.Rows() {
					if strings.Contains(r.Text(), turn.CutInTransitNudgePrefix) {
						t.Errorf("the note stayed in the transcript")
					}
				}
				env.NoViolations()
			})
		}
	}
}

// sizedFetch is "fetch" whose result for n is FetchResult(n, size(n)).
func sizedFetch(size func(n int) int) tool.Tool {
	return testenv.MustFunc(tool.Info{Name: "fetch", Description: "Fetch record n.", ReadOnly: true,
		Parameters: testenv.ObjectSchema(`{"n":{"type":"integer"}}`, "n")},
		func(_ context.Context, args json.RawMessage) (tool.Result, error) {
			var a struct{ N int }
			if err := json.Unmarshal(args, &a); err != nil {
				return tool.Result{}, err
			}
			return tool.Result{Content: testenv.FetchResult(a.N, size(a.N))}, nil
		})
}

// A late overflow that normal compression cannot shrink: after three tool
// rounds of one turn the provider says the context is too long; the head
// and the protected tail are the whole transcript, so a normal pass finds
// nothing, and the turn used to end compression_exhausted. The emergency
// pass keeps the user's message and the newest call and result (cut to a
// head and tail when it alone is too big), summarizes the rest, and the
// retry fits.
func TestEmergencyCompressionAfterLateOverflow(t *testing.T) {
	const window = 4096 // tokens; fakellm's estimate is body bytes / 4
	tests := []struct {
		name    string
		size    func(n int) int
		wantCut bool
	}{
		{"rounds of equal size", func(int) int { return 6000 }, false},
		{"the newest result alone is too big", func(n int) int {
			if n == 3 {
				return 40_000
			}
			return 3000
		}, true},
	}
	for _, tc := range tests {
		for _, api := range testenv.APIs {
			t.Run(tc.name+"/"+api, func(t *testing.T) {
				env := testenv.New(t, testenv.Options{API: api, NoBuiltins: true,
					ExtraTools: []tool.Tool{sizedFetch(tc.size)},
					Configure:  testenv.WithContext(testenv.ContextOptions{Window: 100_000})})
				env.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
					if r.Model == testenv.SummaryModel {
						return fakellm.Text("## Task\nfetch three records\n## State\nrecords 1 and 2 fetched")
					}
					if testenv.Overflowed(r, window) {
						return overflowError(api, len(r.Body)/4, window)
					}
					text := requestText(r.Messages)
					if strings.Contains(text, "RESULT-3") {
						return fakellm.Text("done 3")
					}
					return fakellm.Calls(fakellm.ToolCall("fetch", fmt.Sprintf(`{"n":%d}`, strings.Count(text, "RESULT-")+1)))
				})
				res := env.Run("step 1: fetch records 1 to 3")
				if res.Exit != turn.ExitCompleted || res.FinalText != "done 3" {
					t.Fatalf("exit %s final %q failure %+v", res.Exit, res.FinalText, res.Failure)
				}
				reqs := env.Srv.Requests()
				var overflowed, retry int = -1, -1
				for i, r := range reqs {
					if r.Model == testenv.SummaryModel {
						continue
					}
					if overflowed < 0 && testenv.Overflowed(r, window) {
						overflowed = i
					} else if overflowed >= 0 && retry < 0 {
						retry = i
					}
				}
				if overflowed < 0 || retry < 0 || res.Compactions != 1 {
					t.Fatalf("overflow at %d, retry at %d, %d compactions; want one overflow then a fitting retry", overflowed, retry, res.Compactions)
				}
				r := reqs[retry]
				text := requestText(r.Messages)
				if !strings.Contains(text, "step 1: fetch records 1 to 3") || !strings.Contains(text, "RESULT-3") || !strings.Contains(text, compact.SummaryMarker) {
					t.Errorf("the retry lacks the user's message, the newest result or the summary:\n%.600s", text)
				}
				if strings.Contains(text, "RESULT-1\n") || strings.Contains(text, "RESULT-2\n") {
					t.Errorf("the retry still carries the older results word for word")
				}
				if cut := strings.Contains(text, compact.TruncatedMarker); cut != tc.wantCut {
					t.Errorf("the newest result was cut: %v, want %v", cut, tc.wantCut)
				}
				checkPairs(t, "retry", r.Messages)
				env.NoViolations()
			})
		}
	}
}

// A model that takes no images (image_unsupported) gets them replaced by a
// note once and the request retried; a rejected thinking signature gets the
// replayed thinking dropped once. Each is one repair, not a retry loop.
func TestShapeRepairsForNewClasses(t *testing.T) {
	png := llm.Part{Type: llm.PartImage, MediaType: "image/png", Data: []byte("\x89PNG\r\n\x1a\nfake")}
	for _, api := range testenv.APIs {
		t.Run("image unsupported/"+api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api})
			env.Srv.Script(fakellm.RawError(400, `{"error":"This model does not support image input."}`), fakellm.Text("I can only read the text."))
			res := env.RunWith(context.Background(), agent.Input{Text: "what is in this picture?", Images: []llm.Part{png}})
			if res.Exit != turn.ExitCompleted || res.APICalls != 2 {
				t.Fatalf("exit %s after %d calls, failure %+v", res.Exit, res.APICalls, res.Failure)
			}
			reqs := env.Srv.Requests()
			if !hasImage(reqs[0].Body) || hasImage(reqs[1].Body) || !strings.Contains(requestText(reqs[1].Messages), "[image removed") {
				t.Errorf("first request image %v, retry image %v; want the image replaced by a note on the retry", hasImage(reqs[0].Body), hasImage(reqs[1].Body))
			}
			env.NoViolations()
		})
	}
	t.Run("thinking signature/anthropic", func(t *testing.T) {
		env := testenv.New(t, testenv.Options{API: "anthropic"})
		env.Srv.Script(fakellm.Step{Reasoning: "weighing it", Text: "First answer."})
		if res := env.Run("first"); res.Exit != turn.ExitCompleted {
			t.Fatalf("first turn: %s", res.Exit)
		}
		env.Srv.Reset()
		sig := "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"messages.1.content.0: Invalid `signature` in `thinking` block\"}}"
		env.Srv.Script(fakellm.RawError(400, sig), fakellm.Text("Second answer."))
		res := env.Run("second")
		if res.Exit != turn.ExitCompleted || res.APICalls != 2 {
			t.Fatalf("exit %s after %d calls, failure %+v", res.Exit, res.APICalls, res.Failure)
		}
		reqs := env.Srv.Requests()
		if reqs[0].Messages[1].Reasoning == "" || reqs[1].Messages[1].Reasoning != "" {
			t.Errorf("replayed thinking: first %q, retry %q; want it dropped on the retry", reqs[0].Messages[1].Reasoning, reqs[1].Messages[1].Reasoning)
		}
		env.NoViolations()
	})
}

func hasImage(body []byte) bool {
	return bytes.Contains(body, []byte(`"image_url"`)) || bytes.Contains(body, []byte(`"type":"image"`)) || bytes.Contains(body, []byte(`"inlineData"`))
}
