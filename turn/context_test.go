package turn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// fetchSize is the size of one fetch result: under the compressor's prune
// limit, so only summaries make room.
const fetchSize = 1200

// overflowError is a provider's context-overflow answer in each wire format.
func overflowError(api string, actual, limit int) fakellm.Step {
	if api == "anthropic" {
		return fakellm.HTTPError(400, "invalid_request_error",
			fmt.Sprintf("prompt is too long: %d tokens > %d maximum", actual, limit))
	}
	return fakellm.Step{Error: &fakellm.ErrorReply{Status: 400, Type: "invalid_request_error", Code: "context_length_exceeded",
		Message: fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens.", limit, actual)}}
}

var stepRe = regexp.MustCompile(`step (\d+)\s*$`)

// lastStep finds N of the newest "step N" user text in a request (after a
// compression the summary and the user's message may share one turn).
func lastStep(r fakellm.Request) int {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if m := r.Messages[i]; m.Role == "user" {
			if s := stepRe.FindStringSubmatch(m.Text); s != nil {
				n, _ := strconv.Atoi(s[1])
				return n
			}
		}
	}
	return 0
}

// stepModel is a scripted model for "step N" sessions: it answers a user's
// "step N" by calling fetch(N) and the result with "done N"; summary
// requests get a structured summary numbered by call; and like a real
// provider it rejects any request larger than window (0: no limit).
func stepModel(api string, window int, summaries *atomic.Int32) func(fakellm.Request) fakellm.Step {
	return func(r fakellm.Request) fakellm.Step {
		if r.Model == testenv.SummaryModel {
			k := summaries.Add(1)
			return fakellm.Text(fmt.Sprintf("## Task\nWork through the steps. SUMMARY-%d\n## State\nfetched records\n## Pending asks\nnone\n## Remaining work\nmore steps", k))
		}
		if window > 0 && testenv.Overflowed(r, window) {
			return overflowError(api, len(r.Body)/4, window)
		}
		n := lastStep(r)
		if last := r.Messages[len(r.Messages)-1]; last.Role == "tool" {
			return fakellm.Text(fmt.Sprintf("done %d", n))
		}
		return fakellm.Calls(fakellm.ToolCall("fetch", fmt.Sprintf(`{"n":%d}`, n)))
	}
}

// checkPairs fails when a tool call is not directly followed by its result
// or a result answers no call.
func checkPairs(t *testing.T, where string, msgs []fakellm.Msg) {
	t.Helper()
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == "tool" {
			t.Errorf("%s: message %d is a tool result without a call before it", where, i)
			continue
		}
		for k, c := range m.ToolCalls {
			j := i + 1 + k
			if j >= len(msgs) || msgs[j].Role != "tool" || msgs[j].ToolCallID != c.ID {
				t.Errorf("%s: call %s of message %d is not followed by its result", where, c.ID, i)
			}
		}
		i += len(m.ToolCalls)
	}
}

// markers lists the "RESULT-N" and "step N" marks in text, each once.
func markers(text string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`RESULT-\d+\n|step \d+\n`).FindAllString(text+"\n", -1) {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

func requestText(msgs []fakellm.Msg) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Text)
		b.WriteString("\n")
	}
	return b.String()
}

// A session outgrows a small window: compression fires in preflight,
// before the request that would overflow; the summary request carries the
// middle of the transcript and not its tail; a later pass merges the
// previous summary; tool calls and results are never separated; every
// request passes fakellm's strict validation; the compressed-away rows
// stay archived and searchable.
//
// The "model threshold" case sets the global trigger at the whole window
// (too late) and the model's own at half: the model's wins.
func TestSessionOutgrowsSmallWindow(t *testing.T) {
	const window = 4000
	cases := []struct {
		name string
		opt  testenv.ContextOptions
	}{
		{"global threshold", testenv.ContextOptions{Window: window}},
		{"model threshold", testenv.ContextOptions{Window: window, Threshold: 1, ModelThreshold: 0.5}},
	}
	for _, tc := range cases {
		for _, api := range testenv.APIs {
			t.Run(tc.name+"/"+api, func(t *testing.T) {
				env := testenv.New(t, testenv.Options{API: api, NoBuiltins: true,
					ExtraTools: []tool.Tool{testenv.FetchTool(fetchSize)},
					Configure:  testenv.WithContext(tc.opt)})
				var summaries atomic.Int32
				env.Srv.SetDefault(stepModel(api, window, &summaries))

				compactions := 0
				const steps = 16
				for n := 1; n <= steps; n++ {
					res := env.Run(fmt.Sprintf("step %d", n))
					if res.Exit != turn.ExitCompleted || res.FinalText != fmt.Sprintf("done %d", n) {
						t.Fatalf("step %d: exit %s, text %q, failure %+v", n, res.Exit, res.FinalText, res.Failure)
					}
					compactions += res.Compactions
				}
				env.NoViolations()
				if compactions < 2 || int(summaries.Load()) != compactions {
					t.Fatalf("%d compactions, %d summary calls; want at least 2, one summary each", compactions, summaries.Load())
				}

				reqs := env.Srv.Requests()
				seenSummary := 0
				for i, r := range reqs {
					if r.Model == testenv.SummaryModel {
						seenSummary++
						checkSummaryRequest(t, reqs, i, seenSummary)
						continue
					}
					if testenv.Overflowed(r, window) {
						t.Errorf("request %d (%d bytes) passed the %d-token window: compression came too late", i, len(r.Body), window)
					}
					checkPairs(t, fmt.Sprintf("request %d", i), r.Messages)
				}

				// The live transcript: one merged summary, valid pairs; the
				// old rows archived and still found by search.
				live := env.Rows()
				var sums int
				for _, r := range live {
					if r.Kind == store.RowSummary {
						sums++
						if !strings.HasPrefix(r.Text(), compact.SummaryMarker) || !r.Synthetic {
							t.Errorf("summary row is not marked reference-only: %q", r.Text())
						}
					}
				}
				if sums != 1 {
					t.Errorf("%d summary rows live, want 1 (a later pass merges the earlier summary)", sums)
				}
				all := env.RowsOf(env.Session.ID, true)
				if len(all) <= len(live) {
					t.Errorf("%d rows in all, %d live: the compressed rows were not kept", len(all), len(live))
				}
				if last := reqs[len(reqs)-1]; strings.Contains(requestText(last.Messages), "RESULT-2\n") {
					t.Error("an archived row is still sent to the model")
				}
				hits, err := env.Store.Search(context.Background(), "RESULT-2", store.SearchOptions{SessionID: env.Session.ID})
				if err != nil || len(hits) == 0 {
					t.Errorf("search for an archived result: %v, %d hits", err, len(hits))
				}
			})
		}
	}
}

// checkSummaryRequest checks the k-th summary request (index i): it holds
// the middle of the transcript it replaced and nothing of the protected
// tail, and from the second pass on it merges the previous summary.
func checkSummaryRequest(t *testing.T, reqs []fakellm.Request, i, k int) {
	t.Helper()
	if i == 0 || i+1 >= len(reqs) {
		t.Fatalf("summary request %d has no neighbours", i)
	}
	body := requestText(reqs[i].Messages)
	before := requestText(reqs[i-1].Messages) // the transcript before compression
	after := reqs[i+1].Messages               // head + summary + tail
	s := slices.IndexFunc(after, func(m fakellm.Msg) bool { return strings.Contains(m.Text, compact.SummaryMarker) })
	if s < 0 {
		t.Fatalf("request %d after summary %d carries no summary", i+1, k)
	}
	head := requestText(after[:s])
	// The summary and the user's next message may share one turn.
	_, userAfter, _ := strings.Cut(after[s].Text, "## Remaining work\nmore steps")
	tail := userAfter + "\n" + requestText(after[s+1:])
	var middle int
	for _, m := range markers(before) {
		switch {
		case strings.Contains(tail, m):
			if strings.Contains(body, m) {
				t.Errorf("summary %d: tail item %q was sent to the summarizer", k, strings.TrimSpace(m))
			}
		case strings.Contains(head, m):
		default:
			middle++
			if !strings.Contains(body, m) {
				t.Errorf("summary %d: middle item %q is missing from the summary request", k, strings.TrimSpace(m))
			}
		}
	}
	if middle == 0 {
		t.Errorf("summary %d: nothing was summarized", k)
	}
	if k > 1 {
		prev := fmt.Sprintf("SUMMARY-%d", k-1)
		if !strings.Contains(body, "<previous-summary>") || !strings.Contains(body, prev) {
			t.Errorf("summary %d does not merge the previous summary (%s)", k, prev)
		}
	}
}

// steps runs "step 1" … "step n" on env, each to completion.
func steps(t *testing.T, env *testenv.Env, from, to int) {
	t.Helper()
	for n := from; n <= to; n++ {
		if res := env.Run(fmt.Sprintf("step %d", n)); res.Exit != turn.ExitCompleted {
			t.Fatalf("step %d: %s %+v", n, res.Exit, res.Failure)
		}
	}
}

// countModel counts the requests made to model (all but the summary model
// when model is "").
func countModel(reqs []fakellm.Request, model string) int {
	n := 0
	for _, r := range reqs {
		if (model == "" && r.Model != testenv.SummaryModel) || (model != "" && r.Model == model) {
			n++
		}
	}
	return n
}

// A provider's context-overflow error compresses and restarts the
// iteration; the retried request is smaller, carries the summary and the
// user's message, and the turn completes.
func TestOverflowErrorCompressesAndRetries(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			// The catalogue window is large, so preflight never fires: only
			// the provider knows the prompt does not fit.
			env := testenv.New(t, testenv.Options{API: api, NoBuiltins: true,
				ExtraTools: []tool.Tool{testenv.FetchTool(fetchSize)},
				Configure:  testenv.WithContext(testenv.ContextOptions{Window: 100_000})})
			var summaries atomic.Int32
			env.Srv.SetDefault(stepModel(api, 0, &summaries))
			steps(t, env, 1, 6)
			env.Srv.Reset()

			env.Srv.Script(overflowError(api, 5000, 4096))
			res := env.Run("step 7")
			if res.Exit != turn.ExitCompleted || res.FinalText != "done 7" {
				t.Fatalf("exit %s, text %q, failure %+v", res.Exit, res.FinalText, res.Failure)
			}
			reqs := env.Srv.Requests()
			// overflow, summary, then the turn: fetch call, final answer.
			if res.APICalls != 3 || res.Compactions != 1 || countModel(reqs, testenv.SummaryModel) != 1 || len(reqs) != 4 {
				t.Fatalf("api calls %d, compactions %d, requests %d; want 3 main calls, 1 compaction, 1 summary call",
					res.APICalls, res.Compactions, len(reqs))
			}
			if reqs[1].Model != testenv.SummaryModel {
				t.Fatalf("request 1 is for %s, want the summary", reqs[1].Model)
			}
			retry := reqs[2]
			if len(retry.Body) >= len(reqs[0].Body) {
				t.Errorf("the retried request (%d bytes) is not smaller than the one that overflowed (%d)", len(retry.Body), len(reqs[0].Body))
			}
			text := requestText(retry.Messages)
			if !strings.Contains(text, compact.SummaryMarker) || lastStep(retry) != 7 {
				t.Errorf("the retried request lacks the summary or the user's message:\n%s", text)
			}
			env.NoViolations()
		})
	}
}

// A provider that keeps saying the context overflows ends the turn
// compression_exhausted: every pass that makes progress costs one summary
// call and one more main call, until the attempt budget is spent; a pass
// that makes no progress stops at once. The calls are exact.
func TestRepeatedOverflowExhaustsBudget(t *testing.T) {
	shrinking := func(k int32) string { return strings.Repeat("fact ", 600>>k) } // 3000, 1500, 750 … bytes
	constant := func(int32) string { return strings.Repeat("fact ", 300) }
	cases := []struct {
		name      string
		summary   func(k int32) string
		attempts  int
		mainCalls int
		summaries int
		why       string
	}{
		// Each ends with the emergency pass (one more summary, one more
		// main call) before giving up.
		{"every pass shrinks", shrinking, 3, 5, 4, "3 compression passes"},
		{"budget of one", shrinking, 1, 3, 2, "1 compression passes"},
		{"second pass makes no progress", constant, 3, 3, 3, "made no further progress"},
	}
	for _, tc := range cases {
		for _, api := range testenv.APIs {
			t.Run(tc.name+"/"+api, func(t *testing.T) {
				env := testenv.New(t, testenv.Options{API: api, NoBuiltins: true,
					ExtraTools: []tool.Tool{testenv.FetchTool(fetchSize)},
					Configure:  testenv.WithContext(testenv.ContextOptions{Window: 100_000, Attempts: tc.attempts})})
				var summaries atomic.Int32
				env.Srv.SetDefault(stepModel(api, 0, &summaries))
				steps(t, env, 1, 8)
				env.Srv.Reset()
				var k atomic.Int32
				env.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
					if r.Model == testenv.SummaryModel {
						return fakellm.Text("## Task\n" + tc.summary(k.Add(1)))
					}
					return overflowError(api, 150_000, 100_000)
				})
				res := env.Run("step 9")
				reqs := env.Srv.Requests()
				if res.Exit != turn.ExitCompressionExhausted || res.Failure == nil {
					t.Fatalf("exit %s, failure %+v; want compression_exhausted", res.Exit, res.Failure)
				}
				if got := countModel(reqs, ""); got != tc.mainCalls || res.APICalls != tc.mainCalls {
					t.Errorf("%d main calls (result says %d), want %d", got, res.APICalls, tc.mainCalls)
				}
				if got := countModel(reqs, testenv.SummaryModel); got != tc.summaries {
					t.Errorf("%d summary calls, want %d", got, tc.summaries)
				}
				if !strings.Contains(res.Failure.Message, tc.why) || !strings.Contains(res.Failure.Message, "emergency pass") || !strings.Contains(res.Explanation, "context window") {
					t.Errorf("message %q does not say %q", res.Failure.Message, tc.why)
				}
				if res.Failure.Reason() != "context_overflow" {
					t.Errorf("failure reason %q", res.Failure.Reason())
				}
				// The user's message survives, the session stays usable.
				rows := env.Rows()
				if !slices.ContainsFunc(rows, func(m store.Message) bool { return m.Role == llm.RoleUser && m.Text() == "step 9" }) {
					t.Error("the user's message was lost")
				}
				env.Srv.SetDefault(stepModel(api, 0, &summaries))
				steps(t, env, 10, 10)
				env.NoViolations()
			})
		}
	}
}

// An answer cut by the output limit is continued with a nudge; the pieces
// are stitched (a newline only where both sides are non-space) into one
// settled answer, and no nudge or piece stays in the transcript. At the
// ceiling the partial answer is kept and the result says it was truncated
// (not a network error).
func TestLengthContinuation(t *testing.T) {
	cut := fakellm.Truncated
	cases := []struct {
		name      string
		ceiling   int // LengthContinuations; 0: the default (4)
		steps     []fakellm.Step
		want      string
		truncated bool
	}{
		{name: "two cuts then the end",
			steps: []fakellm.Step{cut("The answer begins"), cut(" and goes on,"), fakellm.Text("ends here.")},
			want:  "The answer begins and goes on,\nends here."},
		{name: "the answer and all four continuations cut",
			steps:     []fakellm.Step{cut("one"), cut("two "), cut("three"), cut("\nfour"), cut("five")},
			want:      "one\ntwo three\nfour\nfive",
			truncated: true},
		{name: "four cuts with a ceiling of three", ceiling: 3,
			steps:     []fakellm.Step{cut("alpha"), cut(" beta"), cut(" gamma"), cut(" delta")},
			want:      "alpha beta gamma delta",
			truncated: true},
	}
	for _, tc := range cases {
		for _, api := range testenv.APIs {
			t.Run(tc.name+"/"+api, func(t *testing.T) {
				env := testenv.New(t, testenv.Options{API: api, NoBuiltins: true,
					Configure: func(c *agent.Config) { c.Limits.LengthContinuations = tc.ceiling }})
				env.Srv.Script(tc.steps...)
				res := env.Run("write a long answer")
				if res.Exit != turn.ExitCompleted || res.Failure != nil {
					t.Fatalf("exit %s, failure %+v", res.Exit, res.Failure)
				}
				if res.FinalText != tc.want || res.Truncated != tc.truncated || res.APICalls != len(tc.steps) {
					t.Fatalf("final %q truncated=%v calls=%d; want %q truncated=%v calls=%d",
						res.FinalText, res.Truncated, res.APICalls, tc.want, tc.truncated, len(tc.steps))
				}
				if tc.truncated && (!strings.Contains(res.Explanation, "output limit") || strings.Contains(res.Explanation, "network")) {
					t.Errorf("explanation %q does not say the answer was truncated", res.Explanation)
				}
				// Each continuation request ends with the piece and the nudge.
				reqs := env.Srv.Requests()
				for i := 1; i < len(reqs); i++ {
					m := reqs[i].Messages
					if n := len(m); n < 2 || m[n-1].Text != turn.LengthContinueNudge || m[n-2].Role != "assistant" {
						t.Errorf("continuation request %d does not end with a piece and the nudge: %+v", i, m)
					}
				}
				rows := env.Rows()
				if got := testenv.Roles(rows); !slices.Equal(got, []string{"user", "assistant"}) {
					t.Fatalf("transcript roles %v; want one user and one settled answer", got)
				}
				ans := rows[1]
				if ans.Text() != tc.want || ans.Synthetic || (ans.FinishReason == llm.FinishLength) != tc.truncated {
					t.Errorf("settled row %q synthetic=%v finish=%s", ans.Text(), ans.Synthetic, ans.FinishReason)
				}
				// The next turn replays the settled answer, never a nudge.
				env.Srv.Reset()
				env.Srv.Script(fakellm.Text("ok"))
				if r := env.Run("thanks"); r.Exit != turn.ExitCompleted {
					t.Fatalf("next turn: %s", r.Exit)
				}
				next := env.Srv.Requests()[0].Messages
				if strings.Contains(requestText(next), turn.LengthContinueNudge) || len(next) != 3 || next[1].Text != tc.want {
					t.Errorf("next turn's request: %+v", next)
				}
				env.NoViolations()
			})
		}
	}
}

// A compression between two continuations copies the pieces and nudges to
// new rows; settling still removes them (found by what they are, not by
// their old IDs), so the transcript holds one answer, not the pieces too.
func TestLengthContinuationAcrossCompression(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api, NoBuiltins: true,
				ExtraTools: []tool.Tool{testenv.FetchTool(fetchSize)},
				Configure:  testenv.WithContext(testenv.ContextOptions{Window: 100_000})})
			var summaries atomic.Int32
			env.Srv.SetDefault(stepModel(api, 0, &summaries))
			steps(t, env, 1, 6)
			env.Srv.SetDefault(nil)
			env.Srv.Script(fakellm.Truncated("first half"), overflowError(api, 5000, 4096), fakellm.Text("second half"))
			env.Srv.ScriptModel(testenv.SummaryModel, fakellm.Text("## Task\nsteps"))
			res := env.Run("write it out")
			if res.Exit != turn.ExitCompleted || res.Compactions != 1 || res.FinalText != "first half\nsecond half" {
				t.Fatalf("exit %s compactions %d final %q failure %+v", res.Exit, res.Compactions, res.FinalText, res.Failure)
			}
			rows := env.Rows()
			last := rows[len(rows)-2:]
			if last[0].Text() != "write it out" || last[1].Text() != "first half\nsecond half" {
				t.Fatalf("transcript ends %q, %q", last[0].Text(), last[1].Text())
			}
			for _, r := range rows {
				if r.Kind == store.RowNudge || (r.Synthetic && r.FinishReason == llm.FinishLength) {
					t.Errorf("continuation scaffolding left: %+v", r)
				}
			}
			env.NoViolations()
		})
	}
}

// roundsModel runs each user turn as rounds tool rounds (two parallel
// fetches every third round, reasoning on some) and then a final answer.
func roundsModel(rounds int) func(fakellm.Request) fakellm.Step {
	return func(r fakellm.Request) fakellm.Step {
		done := 0
		for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role != "user"; i-- {
			if r.Messages[i].Role == "assistant" {
				done++
			}
		}
		if done >= rounds {
			return fakellm.Text(fmt.Sprintf("finished after %d rounds", done))
		}
		n := len(r.Messages)
		st := fakellm.Calls(fakellm.ToolCall("fetch", fmt.Sprintf(`{"n":%d}`, n)))
		if done%3 == 2 {
			st = fakellm.TextCalls("two at once", fakellm.ToolCall("fetch", fmt.Sprintf(`{"n":%d}`, n)),
				fakellm.ToolCall("fetch", fmt.Sprintf(`{"n":%d}`, n+1000)))
		}
		if done%4 == 1 {
			st.Reasoning = fmt.Sprintf("thinking about record %d", n)
		}
		return st
	}
}

// Prompt-cache stability: over a 20-round tool session (two turns of ten
// rounds), each request's messages are a byte prefix of the next one's —
// the recorded raw bodies are compared. For Anthropic, "prefix" is defined
// on the messages with the cache_control markers removed (the two
// message-level breakpoints move to the newest user turns on every call,
// which the cache tolerates: it matches content, not markers); tools and
// system, breakpoints included, are byte-identical in every request, and
// the breakpoints sit exactly on the last tool, the system prompt and the
// last block of the two newest user turns.
func TestRequestPrefixStable(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api, NoBuiltins: true,
				ExtraTools: []tool.Tool{testenv.FetchTool(300)},
				Configure: func(c *agent.Config) {
					testenv.WithContext(testenv.ContextOptions{})(c)
					c.PromptCache = true
				}})
			env.Srv.SetDefault(roundsModel(10))
			for _, task := range []string{"first task", "second task"} {
				if res := env.Run(task); res.Exit != turn.ExitCompleted || res.ToolRounds != 10 {
					t.Fatalf("%s: exit %s, %d tool rounds", task, res.Exit, res.ToolRounds)
				}
			}
			reqs := env.Srv.Requests()
			if len(reqs) != 22 {
				t.Fatalf("%d requests, want 22", len(reqs))
			}
			var prev []byte
			for i, r := range reqs {
				msgs, err := testenv.MessagesJSON(r.Body)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if api == "anthropic" {
					checkBreakpoints(t, i, r.Body, reqs[0].Body)
					msgs = []byte(strings.ReplaceAll(string(msgs), testenv.CacheMark, ""))
				} else if !slices.Equal(testenv.FieldJSON(r.Body, "tools"), testenv.FieldJSON(reqs[0].Body, "tools")) {
					t.Errorf("request %d: tools bytes changed", i)
				}
				if api == "openai-responses" && i == 11 {
					// A new user message is the reasoning replay boundary:
					// the previous turn's reasoning items drop out, the rest
					// of the prefix stays.
					prev = withoutReasoningItems(t, prev)
				}
				if i > 0 && !testenv.IsPrefix(prev, msgs) {
					t.Errorf("request %d's messages do not start with request %d's:\n%s\n---\n%s", i, i-1, prev, msgs)
				}
				prev = msgs
			}
			env.NoViolations()
		})
	}
}

// checkBreakpoints checks an Anthropic body's cache_control markers.
func checkBreakpoints(t *testing.T, i int, body, first []byte) {
	t.Helper()
	for _, f := range []string{"tools", "system"} {
		got := testenv.FieldJSON(body, f)
		if !slices.Equal(got, testenv.FieldJSON(first, f)) {
			t.Errorf("request %d: %s bytes changed", i, f)
		}
		if !strings.HasSuffix(strings.TrimSuffix(string(got), "]"), testenv.CacheMark+"}") {
			t.Errorf("request %d: no breakpoint on the last %s block: %s", i, f, got)
		}
		if strings.Count(string(got), testenv.CacheMark) != 1 {
			t.Errorf("request %d: %s has other breakpoints: %s", i, f, got)
		}
	}
	var msgs []struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(testenv.FieldJSON(body, "messages"), &msgs); err != nil {
		t.Fatalf("request %d: %v", i, err)
	}
	users := 0
	for k := len(msgs) - 1; k >= 0; k-- {
		m := msgs[k]
		for b, block := range m.Content {
			marked := strings.Contains(string(block), `"cache_control"`)
			want := m.Role == "user" && users < 2 && b == len(m.Content)-1
			if marked != want {
				t.Errorf("request %d: message %d block %d marked=%v, want %v", i, k, b, marked, want)
			}
		}
		if m.Role == "user" {
			users++
		}
	}
}

// A failed or timed-out summary call falls back to a placeholder summary
// (the turn goes on, the transcript still shrinks) or, with on_failure:
// abort, ends the turn compression_failed with the transcript untouched.
func TestSummaryFailure(t *testing.T) {
	const window = 4000
	cases := []struct {
		name    string
		mode    compact.FailureMode
		timeout time.Duration
		summary fakellm.Step
		exit    turn.Exit
	}{
		{"server error, placeholder", compact.FailPlaceholder, 0, fakellm.HTTPError(500, "api_error", "boom"), turn.ExitCompleted},
		{"timeout, placeholder", compact.FailPlaceholder, 200 * time.Millisecond, fakellm.Text("too late").WithLatency(5 * time.Second), turn.ExitCompleted},
		{"server error, abort", compact.FailAbort, 0, fakellm.HTTPError(500, "api_error", "boom"), turn.ExitCompressionFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{NoBuiltins: true,
				ExtraTools: []tool.Tool{testenv.FetchTool(fetchSize)},
				Configure: testenv.WithContext(testenv.ContextOptions{Window: window, OnFailure: tc.mode,
					SummaryTimeout: tc.timeout})})
			var summaries atomic.Int32
			model := stepModel("openai", window, &summaries)
			env.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
				if r.Model == testenv.SummaryModel {
					return tc.summary
				}
				return model(r)
			})
			var res turn.Result
			n := 0
			for n = 1; n <= 12; n++ {
				before := env.Rows()
				res = env.Run(fmt.Sprintf("step %d", n))
				if res.Exit != turn.ExitCompleted {
					if res.Exit != tc.exit || res.Failure == nil || res.Failure.Reason() != "compression_failed" {
						t.Fatalf("step %d: exit %s, failure %+v; want %s", n, res.Exit, res.Failure, tc.exit)
					}
					// Nothing was compressed away: the turn's message is kept
					// after the untouched history.
					after := env.Rows()
					if len(after) < len(before)+1 || after[len(before)].Text() != fmt.Sprintf("step %d", n) {
						t.Errorf("transcript changed by an aborted compression")
					}
					if len(env.RowsOf(env.Session.ID, true)) != len(after) {
						t.Error("rows were archived by an aborted compression")
					}
					return
				}
				if res.Compactions > 0 {
					break
				}
			}
			if tc.exit != turn.ExitCompleted {
				t.Fatalf("no turn failed; want %s", tc.exit)
			}
			if n > 12 {
				t.Fatal("no compression happened")
			}
			var sum string
			for _, r := range env.Rows() {
				if r.Kind == store.RowSummary {
					sum = r.Text()
				}
			}
			if !strings.Contains(sum, "A summary could not be produced") {
				t.Errorf("summary row %q is not the placeholder", sum)
			}
			env.NoViolations()
		})
	}
}

// A marathon tool turn compresses many times: each successful pass is
// refunded once the provider reports the prompt back under the threshold,
// so a budget of two passes never runs dry, the gate never goes dark and
// no request overflows.
func TestMarathonTurnRefundsBudget(t *testing.T) {
	const window, rounds = 8000, 30
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api, NoBuiltins: true,
				ExtraTools: []tool.Tool{testenv.FetchTool(fetchSize)},
				Configure:  testenv.WithContext(testenv.ContextOptions{Window: window, Attempts: 2})})
			var summaries, calls atomic.Int32
			env.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
				if r.Model == testenv.SummaryModel {
					return fakellm.Text(fmt.Sprintf("## Task\nrounds\n## State\npass %d", summaries.Add(1)))
				}
				if testenv.Overflowed(r, window) {
					return overflowError(api, len(r.Body)/4, window)
				}
				if k := calls.Add(1); k <= rounds {
					return fakellm.Calls(fakellm.ToolCall("fetch", fmt.Sprintf(`{"n":%d}`, k)))
				}
				return fakellm.Text("all rounds done")
			})
			res := env.Run("do many rounds")
			if res.Exit != turn.ExitCompleted || res.ToolRounds != rounds {
				t.Fatalf("exit %s after %d rounds, failure %+v", res.Exit, res.ToolRounds, res.Failure)
			}
			if res.Compactions <= 2 {
				t.Fatalf("%d compactions with a budget of 2; the test needs more to show the refund", res.Compactions)
			}
			for i, r := range env.Srv.Requests() {
				if r.Model != testenv.SummaryModel && testenv.Overflowed(r, window) {
					t.Errorf("request %d overflowed: the gate went dark", i)
				}
			}
			env.NoViolations()
		})
	}
}

// A fallback switch resets the compression budget: with one pass per
// turn, spent on the primary model, the fallback's smaller window still
// gets its own pass before its first request.
func TestFallbackResetsCompressionBudget(t *testing.T) {
	const big, small = 6000, 1600
	env := testenv.New(t, testenv.Options{NoBuiltins: true, Fallbacks: []string{"small-model"},
		ExtraTools: []tool.Tool{testenv.FetchTool(fetchSize)},
		Configure: func(c *agent.Config) {
			testenv.WithContext(testenv.ContextOptions{Attempts: 1, MinTail: 2})(c)
			c.Catalogue = catalogue.New(map[string]catalogue.Model{
				"test-model": {Window: big}, "small-model": {Window: small},
			})
		}})
	var summaries atomic.Int32
	primary := stepModel("openai", big, &summaries)
	fallback := stepModel("openai", small, &summaries)
	env.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
		if r.Model == "test-model" {
			if strings.Contains(requestText(r.Messages), compact.SummaryMarker) {
				// The primary's key is refused once it has compressed.
				return fakellm.HTTPError(401, "authentication_error", "invalid api key")
			}
			return primary(r)
		}
		return fallback(r) // the summary model and the fallback
	})
	var lines []string
	var res turn.Result
	for n := 1; n <= 12 && res.Model != "small-model"; n++ {
		res = env.RunWith(context.Background(), agent.Input{Text: fmt.Sprintf("step %d", n),
			Hooks: turn.Hooks{Status: func(s string) { lines = append(lines, s) }}})
		if res.Exit != turn.ExitCompleted {
			t.Fatalf("step %d: exit %s, failure %+v", n, res.Exit, res.Failure)
		}
	}
	if res.Model != "small-model" || res.Compactions != 2 {
		t.Fatalf("ended on %s after %d compactions; want the fallback after two (one per model)", res.Model, res.Compactions)
	}
	if !slices.ContainsFunc(lines, func(s string) bool { return strings.Contains(s, "threshold of small-model: compressing") }) {
		t.Errorf("no compression for the fallback's window:\n%s", strings.Join(lines, "\n"))
	}
	for i, r := range env.Srv.Requests() {
		if r.Model == "small-model" && testenv.Overflowed(r, small) {
			t.Errorf("request %d to the fallback overflowed its window", i)
		}
	}
	env.NoViolations()
}

// withoutReasoningItems drops the Responses reasoning items from an input
// array, keeping every other item's bytes.
func withoutReasoningItems(t *testing.T, input []byte) []byte {
	t.Helper()
	var items []json.RawMessage
	if err := json.Unmarshal(input, &items); err != nil {
		t.Fatal(err)
	}
	kept := make([][]byte, 0, len(items))
	for _, it := range items {
		var head struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(it, &head) == nil && head.Type != "reasoning" {
			kept = append(kept, it)
		}
	}
	return append(append([]byte("["), bytes.Join(kept, []byte(","))...), ']')
}
