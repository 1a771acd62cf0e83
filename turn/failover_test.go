package turn_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/catalogue"
	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// Real error bodies, shaped as the providers send them (sources in
// failover/classify_test.go).
const (
	openAIRateLimitBody = `{"error":{"message":"Rate limit reached for gpt-4o in organization org-xxxx on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again later.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	anthRateLimitBody   = `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 20,000 input tokens per minute. For details, refer to: https://docs.anthropic.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later."}}`
	openAIServerBody    = `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`
	anthAPIErrorBody    = `{"type":"error","error":{"type":"api_error","message":"Internal server error"},"request_id":"req_011CT8YPUqqcs9Q9E9ZxZKBn"}`
	anthOverloadedBody  = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`
	openAIOverloadBody  = `{"error":{"message":"The server is overloaded or not ready yet.","type":"server_error","param":null,"code":null}}`
	openAIBadKeyBody    = `{"error":{"message":"Incorrect API key provided: sk-proj-****abcd. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
	anthAuthBody        = `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_011CUdL49e3Fu9bCKbWF6cXD"}`
	openAIQuotaBody     = `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`
	anthCreditBody      = `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."},"request_id":"req_011CbrFTcXhtiMzr3s6EocF7"}`
	openAIValidateBody  = `{"error":{"message":"'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.","type":"invalid_request_error","param":"messages","code":null}}`
	anthValidateBody    = `{"type":"error","error":{"type":"invalid_request_error","message":"tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'"}}`
	openAIMaxTokensBody = `{"error":{"message":"max_tokens is too large: 50000. This model supports at most 16384 completion tokens, whereas you provided 50000.","type":"invalid_request_error","param":"max_tokens","code":null}}`
	anthExtraUsageBody  = `{"type":"error","error":{"type":"invalid_request_error","message":"You're out of extra usage. Add more at claude.ai/settings/usage and keep going."},"request_id":"req_011CZqpKrzn59RBAo9o9ck3C"}`
	orUpstreamBody      = `{"error":{"message":"Provider returned error","code":429,"metadata":{"raw":"z-ai/glm-5.3-flash is temporarily rate-limited upstream. Please retry shortly, or add your own key to accumulate your rate limits: https://openrouter.ai/settings/integrations","provider_name":"BaseTen","limit_source":"upstream_provider_shared_pool"}}}`
	anthMaxTokensBody   = `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 64001 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5-20250929"}}`
)

// bodies picks the real body of the env's wire format.
func bodies(api, openAI, anthropic string) string {
	if api == "anthropic" {
		return anthropic
	}
	return openAI
}

// recorder watches a turn through its hooks: status lines (with how many
// requests the server had received when each was shown), discards and the
// streamed text.
type recorder struct {
	srv *fakellm.Server

	mu       sync.Mutex
	updates  []recorded
	statuses []statusLine
	discards int
	streamed strings.Builder
	onStatus func(string)
}

// recorded is an update with the requests the server had seen by then.
type recorded struct {
	u        turn.Update
	requests int
}

// wantUpdate returns the first recorded update of type T that match
// accepts, and the requests seen when it was emitted.
func wantUpdate[T turn.Update](t *testing.T, r *recorder, match func(T) bool) (T, int) {
	t.Helper()
	if u, n, ok := findUpdate(r, match); ok {
		return u, n
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var got []string
	for _, u := range r.updates {
		got = append(got, fmt.Sprintf("%#v", u.u))
	}
	var zero T
	t.Fatalf("no %T update as wanted; got:\n%s", zero, strings.Join(got, "\n"))
	return zero, 0
}

func findUpdate[T turn.Update](r *recorder, match func(T) bool) (T, int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, u := range r.updates {
		if v, ok := u.u.(T); ok && match(v) {
			return v, u.requests, true
		}
	}
	var zero T
	return zero, 0, false
}

type statusLine struct {
	text     string
	requests int // requests the server had seen when the line was shown
}

func newRecorder(srv *fakellm.Server) *recorder { return &recorder{srv: srv} }

func (r *recorder) hooks() turn.Hooks {
	return turn.Hooks{
		Sink: func(u turn.Update) {
			n := len(r.srv.Requests())
			r.mu.Lock()
			defer r.mu.Unlock()
			r.updates = append(r.updates, recorded{u, n})
		},
		TextDelta: func(s string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.streamed.WriteString(s)
		},
		Discard: func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.discards++
		},
		Status: func(line string) {
			n := len(r.srv.Requests())
			r.mu.Lock()
			r.statuses = append(r.statuses, statusLine{text: line, requests: n})
			f := r.onStatus
			r.mu.Unlock()
			if f != nil {
				f(line)
			}
		},
	}
}

// status returns the first status line containing sub.
func (r *recorder) status(sub string) (statusLine, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.statuses {
		if strings.Contains(s.text, sub) {
			return s, true
		}
	}
	return statusLine{}, false
}

func (r *recorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.statuses))
	for i, s := range r.statuses {
		out[i] = s.text
	}
	return out
}

func (r *recorder) wantStatus(t *testing.T, sub string) statusLine {
	t.Helper()
	s, ok := r.status(sub)
	if !ok {
		t.Fatalf("no status line contains %q; got %q", sub, r.lines())
	}
	return s
}

// run runs one turn on env with the recorder's hooks.
func (r *recorder) run(ctx context.Context, env *testenv.Env, text string) turn.Result {
	env.T.Helper()
	return env.RunWith(ctx, agent.Input{Text: text, Hooks: r.hooks()})
}

// keyOf is the API key a recorded request carried.
func keyOf(req fakellm.Request) string {
	if k := req.Header.Get("X-Api-Key"); k != "" {
		return k
	}
	if k := req.Header.Get("X-Goog-Api-Key"); k != "" {
		return k
	}
	return strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
}

func models(reqs []fakellm.Request) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = r.Model
	}
	return out
}

// wantFailedTurn checks a terminal provider failure: the result carries
// reason, retryability, provider, model and a sentence, and the transcript
// is closed by a display-only failure row.
func wantFailedTurn(t *testing.T, env *testenv.Env, res turn.Result, reason string) {
	t.Helper()
	if res.Exit != turn.ExitFailed || res.Failure == nil {
		t.Fatalf("exit %s failure %+v; want failed with a failure", res.Exit, res.Failure)
	}
	f := res.Failure
	if f.Reason() != reason {
		t.Errorf("failure_reason = %q, want %q (%s)", f.Reason(), reason, f.Message)
	}
	if f.Provider != "primary" || f.Model != "test-model" {
		t.Errorf("failure provider/model = %q/%q, want primary/test-model", f.Provider, f.Model)
	}
	if f.Message == "" || strings.ToUpper(f.Message[:1]) != f.Message[:1] || !strings.Contains(f.Message, ". ") {
		t.Errorf("failure message %q is not a sentence a person can act on", f.Message)
	}
	if f.Detail != "" && !strings.Contains(f.Message, `primary said: "`) {
		t.Errorf("failure message %q does not quote what the provider said (%q)", f.Message, f.Detail)
	}
	if len(res.Routes) == 0 || res.Routes[0].Provider != "primary" {
		t.Errorf("routes = %+v, want the primary recorded", res.Routes)
	}
	rows := env.Rows()
	last := rows[len(rows)-1]
	if last.Role != llm.RoleAssistant || last.Kind != store.RowFailure || !last.Kind.DisplayOnly() {
		t.Fatalf("last row = %s/%q, want a display-only failure row closing the turn", last.Role, last.Kind)
	}
	if !strings.Contains(last.Text(), f.Message) {
		t.Errorf("failure row %q does not carry the message %q", last.Text(), f.Message)
	}
}

// A 429 with Retry-After: 1 is waited out (at least one second) and costs
// exactly one extra call; the status line names the wait and the cause.
func TestRateLimitRetryAfterHonoured(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api})
			env.Srv.Script(
				fakellm.RawError(429, bodies(api, openAIRateLimitBody, anthRateLimitBody), "Retry-After: 1"),
				fakellm.Text("Done after waiting."),
			)
			rec := newRecorder(env.Srv)
			start := time.Now()
			res := rec.run(context.Background(), env, "hi")
			elapsed := time.Since(start)
			if res.Exit != turn.ExitCompleted || res.FinalText != "Done after waiting." {
				t.Fatalf("exit %s text %q: %s", res.Exit, res.FinalText, res.Explanation)
			}
			if n := len(env.Srv.Requests()); n != 2 || res.APICalls != 2 {
				t.Fatalf("server saw %d requests, result counts %d; want 2 (one retry)", n, res.APICalls)
			}
			if elapsed < time.Second {
				t.Errorf("turn took %v; the scripted Retry-After of 1s was not waited", elapsed)
			}
			wantUpdate(t, rec, func(u turn.CallFailed) bool {
				return u.Decision == turn.DecisionRetry && u.Class == string(failover.ClassRateLimit) && u.Wait == time.Second && u.Retry == 1
			})
			env.NoViolations()
		})
	}
}

// Server errors are retried on the same route until one succeeds.
func TestServerErrorsRetriedThenSuccess(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api})
			body := bodies(api, openAIServerBody, anthAPIErrorBody)
			env.Srv.Script(fakellm.RawError(500, body), fakellm.RawError(500, body), fakellm.Text("Third time lucky."))
			rec := newRecorder(env.Srv)
			res := rec.run(context.Background(), env, "hi")
			if res.Exit != turn.ExitCompleted || res.FinalText != "Third time lucky." {
				t.Fatalf("exit %s text %q: %s", res.Exit, res.FinalText, res.Explanation)
			}
			if n := len(env.Srv.Requests()); n != 3 || res.APICalls != 3 {
				t.Fatalf("server saw %d requests, result counts %d; want 3", n, res.APICalls)
			}
			want := []turn.RouteAttempt{{Provider: "primary", Model: "test-model", Calls: 3, Outcome: "ok"}}
			if !slices.Equal(res.Routes, want) {
				t.Errorf("routes = %+v, want %+v", res.Routes, want)
			}
			wantUpdate(t, rec, func(u turn.CallFailed) bool {
				return u.Decision == turn.DecisionRetry && u.HTTPStatus == 500 && u.Provider == "primary" && u.Retry == 2 && u.MaxRetries == 3
			})
			if got := testenv.Roles(env.Rows()); !slices.Equal(got, []string{"user", "assistant"}) {
				t.Errorf("roles = %v; failed attempts must leave no rows", got)
			}
			env.NoViolations()
		})
	}
}

// Anthropic's 529 overloaded_error is retried on the same key.
func TestAnthropicOverloadedThenSuccess(t *testing.T) {
	env := testenv.New(t, testenv.Options{API: "anthropic", Keys: []string{"key-one", "key-two"}})
	env.Srv.Script(fakellm.RawError(529, anthOverloadedBody), fakellm.Text("Back online."))
	rec := newRecorder(env.Srv)
	res := rec.run(context.Background(), env, "hi")
	if res.Exit != turn.ExitCompleted || res.FinalText != "Back online." {
		t.Fatalf("exit %s text %q: %s", res.Exit, res.FinalText, res.Explanation)
	}
	reqs := env.Srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("server saw %d requests, want 2", len(reqs))
	}
	if keyOf(reqs[0]) != "key-one" || keyOf(reqs[1]) != "key-one" {
		t.Errorf("keys = %q, %q; an overload must not rotate the key", keyOf(reqs[0]), keyOf(reqs[1]))
	}
	wantUpdate(t, rec, func(u turn.CallFailed) bool { return u.Decision == turn.DecisionRetry && u.HTTPStatus == 529 })
	env.NoViolations()
}

// A stream that dies mid-answer (or mid-thought) is retried; the UI is told
// to drop what it showed, and the partial text is never persisted nor sent
// back.
func TestMidStreamDropRetriedPartialDiscarded(t *testing.T) {
	const partial = "PARTIAL-FRAGMENT that must vanish"
	drops := []struct {
		name string
		step fakellm.Step
	}{
		{"answer", fakellm.Drop(partial)},
		{"thinking", fakellm.Step{Reasoning: partial, Drop: true}},
	}
	for _, api := range testenv.APIs {
		for _, d := range drops {
			t.Run(api+"/"+d.name, func(t *testing.T) {
				env := testenv.New(t, testenv.Options{API: api})
				env.Srv.Script(d.step, fakellm.Text("The complete answer."))
				rec := newRecorder(env.Srv)
				res := rec.run(context.Background(), env, "hi")
				if res.Exit != turn.ExitCompleted || res.FinalText != "The complete answer." {
					t.Fatalf("exit %s text %q: %s", res.Exit, res.FinalText, res.Explanation)
				}
				if rec.discards != 1 {
					t.Errorf("Hooks.Discard called %d times, want 1", rec.discards)
				}
				if d.step.Text != "" && !strings.Contains(rec.streamed.String(), "PARTIAL") {
					t.Errorf("the partial text was never streamed (%q): the test does not exercise a mid-answer drop", rec.streamed.String())
				}
				reqs := env.Srv.Requests()
				if len(reqs) != 2 {
					t.Fatalf("server saw %d requests, want 2", len(reqs))
				}
				for _, m := range reqs[1].Messages {
					if strings.Contains(m.Text, "PARTIAL") || strings.Contains(m.Reasoning, "PARTIAL") {
						t.Errorf("the retry sent the partial text back: %+v", m)
					}
				}
				for _, r := range env.RowsOf(env.Session.ID, true) {
					if strings.Contains(r.Text(), "PARTIAL") || (r.Reasoning != nil && strings.Contains(r.Reasoning.Text, "PARTIAL")) {
						t.Errorf("partial text persisted in row %d (%s/%q)", r.Seq, r.Role, r.Kind)
					}
				}
				if got := testenv.Roles(env.Rows()); !slices.Equal(got, []string{"user", "assistant"}) {
					t.Errorf("roles = %v", got)
				}
				wantUpdate(t, rec, func(u turn.CallFailed) bool { return u.Decision == turn.DecisionRetry })
				env.NoViolations()
			})
		}
	}
}

// A 401 on the primary falls back to the next route. The fallback's
// request passes the preflight gate again, against the fallback's (much
// smaller) window; the result records both routes; the next turn tries the
// primary again.
func TestAuthFallsBackAndRerunsPreflight(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{
				API: api, NoBuiltins: true, Fallbacks: []string{"fb-model"},
				Configure: func(c *agent.Config) {
					c.Catalogue = catalogue.New(map[string]catalogue.Model{
						"test-model": {Window: 1_000_000, MaxOutput: 4096},
						"fb-model":   {Window: 2_000, MaxOutput: 1024},
					})
					c.Compressor = &compact.Compressor{Summarizer: c.Routes[0].Provider, Model: "aux-model"}
				},
			})
			env.Srv.ScriptModel("test-model", fakellm.RawError(401, bodies(api, openAIBadKeyBody, anthAuthBody)))
			env.Srv.ScriptModel("fb-model", fakellm.Text("The fallback answers."))
			rec := newRecorder(env.Srv)
			// ~1,500 tokens: far under the primary's threshold, over the
			// fallback's (half of 2,000).
			long := strings.Repeat("Please read this sentence carefully. ", 160)
			res := rec.run(context.Background(), env, long)
			if res.Exit != turn.ExitCompleted || res.FinalText != "The fallback answers." {
				t.Fatalf("exit %s text %q: %s", res.Exit, res.FinalText, res.Explanation)
			}
			reqs := env.Srv.Requests()
			if got := models(reqs); !slices.Equal(got, []string{"test-model", "fb-model"}) {
				t.Fatalf("requests went to %v, want the primary once, then the fallback", got)
			}
			want := []turn.RouteAttempt{
				{Provider: "primary", Model: "test-model", Calls: 1, Outcome: "auth"},
				{Provider: "fallback", Model: "fb-model", Calls: 1, Outcome: "ok"},
			}
			if !slices.Equal(res.Routes, want) {
				t.Errorf("routes = %+v, want %+v", res.Routes, want)
			}
			if res.Provider != "fallback" || res.Model != "fb-model" {
				t.Errorf("result provider/model = %s/%s, want the fallback", res.Provider, res.Model)
			}
			_, fb := wantUpdate(t, rec, func(u turn.Fallback) bool {
				return u.From == "primary/test-model" && u.To == "fallback/fb-model" && u.Class == string(failover.ClassAuth)
			})
			if fb != 1 {
				t.Errorf("fallback announced after %d requests, want 1", fb)
			}
			// The preflight gate measured the request against fb-model's
			// window after the switch and before the fallback's call.
			_, pre := wantUpdate(t, rec, func(u turn.Compression) bool {
				return u.Step == turn.CompressThreshold && u.Model == "fb-model"
			})
			if pre != 1 {
				t.Errorf("fallback preflight ran after %d requests, want between the primary's and the fallback's call", pre)
			}
			if _, _, ok := findUpdate(rec, func(u turn.Compression) bool { return u.Model == "test-model" }); ok {
				t.Error("the primary's preflight must not have been over its threshold")
			}
			env.NoViolations()

			// The next turn starts on the primary again.
			env.Srv.ScriptModel("test-model", fakellm.Text("The primary is back."))
			res = rec.run(context.Background(), env, "again")
			if res.Exit != turn.ExitCompleted || res.FinalText != "The primary is back." {
				t.Fatalf("next turn: exit %s text %q: %s", res.Exit, res.FinalText, res.Explanation)
			}
			if got := models(env.Srv.Requests()[2:]); !slices.Equal(got, []string{"test-model"}) {
				t.Errorf("next turn went to %v, want the primary", got)
			}
			if len(res.Routes) != 1 || res.Routes[0].Model != "test-model" {
				t.Errorf("next turn routes = %+v", res.Routes)
			}
			env.NoViolations()
		})
	}
}

// A primary whose only key is cooling down is skipped by the next turn:
// it goes straight to the fallback without calling the primary.
func TestNextTurnSkipsCoolingPrimary(t *testing.T) {
	env := testenv.New(t, testenv.Options{Keys: []string{"only-key"}, Fallbacks: []string{"fb-model"}})
	env.Srv.ScriptModel("test-model", fakellm.RawError(401, openAIBadKeyBody))
	env.Srv.ScriptModel("fb-model", fakellm.Text("fallback one"), fakellm.Text("fallback two"))
	if res := env.Run("first"); res.Exit != turn.ExitCompleted || res.FinalText != "fallback one" {
		t.Fatalf("first turn: exit %s text %q: %s", res.Exit, res.FinalText, res.Explanation)
	}
	rec := newRecorder(env.Srv)
	res := rec.run(context.Background(), env, "second")
	if res.Exit != turn.ExitCompleted || res.FinalText != "fallback two" {
		t.Fatalf("second turn: exit %s text %q: %s", res.Exit, res.FinalText, res.Explanation)
	}
	if got := models(env.Srv.Requests()); !slices.Equal(got, []string{"test-model", "fb-model", "fb-model"}) {
		t.Errorf("requests went to %v; the cooling primary must not be called again", got)
	}
	if len(res.Routes) != 2 || res.Routes[0].Calls != 0 || res.Routes[0].Outcome != "auth" || res.Routes[1].Outcome != "ok" {
		t.Errorf("second turn routes = %+v, want primary (0 calls, auth) then fallback ok", res.Routes)
	}
	rec.wantStatus(t, "every primary key is cooling down")
	env.NoViolations()
}

// A billing failure on the only key ends the turn after exactly one call
// and benches the key in the store: an hour for a certain verdict, two
// minutes for Anthropic's ambiguous "out of extra usage", which the failure
// reports as unverified rather than as a fact.
func TestBillingOnOnlyKeyIsTerminal(t *testing.T) {
	tests := []struct {
		name       string
		api        string
		step       fakellm.Step
		unverified bool
		cooldown   time.Duration
		reason     string // the persisted cooldown reason
	}{
		{"openai 429 insufficient_quota", "openai", fakellm.RawError(429, openAIQuotaBody), false, time.Hour, "billing"},
		{"anthropic 400 credit balance", "anthropic", fakellm.RawError(400, anthCreditBody), false, time.Hour, "billing"},
		{"anthropic 400 out of extra usage", "anthropic", fakellm.RawError(400, anthExtraUsageBody), true, failover.CooldownBillingUnverified, failover.ReasonBillingUnverified},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: tt.api, Keys: []string{"only-key"}})
			env.Srv.Script(tt.step)
			before := time.Now()
			res := env.Run("hi")
			if n := len(env.Srv.Requests()); n != 1 || res.APICalls != 1 {
				t.Fatalf("server saw %d requests, result counts %d; want exactly 1", n, res.APICalls)
			}
			wantFailedTurn(t, env, res, "billing")
			if res.Failure.Retryable || res.Failure.BillingUnverified != tt.unverified {
				t.Errorf("billing: retryable %v unverified %v, want false/%v", res.Failure.Retryable, res.Failure.BillingUnverified, tt.unverified)
			}
			if tt.unverified && !strings.Contains(res.Failure.Message, "content filter") {
				t.Errorf("an unverified billing verdict must name the content-filter possibility: %q", res.Failure.Message)
			}
			if !tt.unverified && strings.Contains(res.Failure.Message, "content filter") {
				t.Errorf("a certain billing verdict must not be hedged: %q", res.Failure.Message)
			}
			cds, err := env.Store.Cooldowns(context.Background(), "primary", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if len(cds) != 1 || cds[0].KeyID != failover.KeyID("only-key") || cds[0].Reason != tt.reason {
				t.Fatalf("cooldowns = %+v, want the key benched with reason %s", cds, tt.reason)
			}
			if d := cds[0].Until.Sub(before); d < tt.cooldown-time.Minute/2 || d > tt.cooldown+time.Minute/2 {
				t.Errorf("cooldown lasts %v, want %v", d, tt.cooldown)
			}
		})
	}
}

// An aggregator's 429 that relays an upstream provider's limit falls back
// at once without benching or rotating the key: the key is fine.
func TestUpstreamRateLimitFallsBackWithoutRotating(t *testing.T) {
	env := testenv.New(t, testenv.Options{Keys: []string{"key-one", "key-two"}, Fallbacks: []string{"fb-model"}})
	env.Srv.ScriptModel("test-model", fakellm.RawError(429, orUpstreamBody))
	env.Srv.ScriptModel("fb-model", fakellm.Text("Another upstream answers."))
	rec := newRecorder(env.Srv)
	res := rec.run(context.Background(), env, "hi")
	if res.Exit != turn.ExitCompleted || res.FinalText != "Another upstream answers." {
		t.Fatalf("exit %s text %q: %s", res.Exit, res.FinalText, res.Explanation)
	}
	reqs := env.Srv.Requests()
	if got := models(reqs); !slices.Equal(got, []string{"test-model", "fb-model"}) {
		t.Fatalf("requests went to %v, want the primary once then the fallback", got)
	}
	if keyOf(reqs[0]) != "key-one" {
		t.Errorf("primary used %q", keyOf(reqs[0]))
	}
	if res.Routes[0].Outcome != "upstream_rate_limit" {
		t.Errorf("routes = %+v", res.Routes)
	}
	rec.wantStatus(t, "primary (upstream BaseTen) relayed an upstream rate limit (429)")
	cds, err := env.Store.Cooldowns(context.Background(), "primary", time.Now())
	if err != nil || len(cds) != 0 {
		t.Errorf("cooldowns = %+v (%v); an upstream limit must not bench our key", cds, err)
	}
}

// A non-retryable 400 makes exactly one call. The display-only failure row
// closes the turn, is never sent to a model, and the next turn passes the
// server's strict validation.
func TestNonRetryable400IsOneCall(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api})
			env.Srv.Script(fakellm.RawError(400, bodies(api, openAIValidateBody, anthValidateBody)))
			res := env.Run("hi")
			if n := len(env.Srv.Requests()); n != 1 || res.APICalls != 1 {
				t.Fatalf("server saw %d requests, result counts %d; want exactly 1", n, res.APICalls)
			}
			wantFailedTurn(t, env, res, "format_error")
			if res.Failure.Retryable {
				t.Error("a format error must not be reported retryable")
			}
			if res.Failure.Detail == "" {
				t.Error("the provider's own message is missing from the failure detail")
			}
			if got := testenv.Roles(env.Rows()); !slices.Equal(got, []string{"user", "assistant"}) {
				t.Errorf("roles = %v, want the user's message closed by the failure row", got)
			}

			env.Srv.Script(fakellm.Text("Now it works."))
			if res := env.Run("try again"); res.Exit != turn.ExitCompleted {
				t.Fatalf("next turn: exit %s: %s", res.Exit, res.Explanation)
			}
			next := env.Srv.Requests()[1]
			for _, m := range next.Messages {
				if strings.Contains(m.Text, "Turn failed") {
					t.Errorf("the display-only failure row was sent to the model: %+v", m)
				}
			}
			if last := next.Messages[len(next.Messages)-1]; last.Role != "user" || !strings.Contains(last.Text, "try again") {
				t.Errorf("last message sent = %+v, want the new user message", last)
			}
			env.NoViolations()
		})
	}
}

// A 400 that says max_tokens is too large is clamped once to the limit the
// error names and retried; the retry carries the clamped value; it never
// falls back, and a second cap error ends the turn.
func TestOutputCapClampedOnce(t *testing.T) {
	cases := []struct {
		api          string
		asked, limit int
		body         string
	}{
		{"openai", 50000, 16384, openAIMaxTokensBody},
		{"anthropic", 64001, 64000, anthMaxTokensBody},
	}
	for _, tc := range cases {
		t.Run(tc.api, func(t *testing.T) {
			for _, secondFails := range []bool{false, true} {
				name := "then success"
				if secondFails {
					name = "twice"
				}
				t.Run(name, func(t *testing.T) {
					env := testenv.New(t, testenv.Options{API: tc.api, Fallbacks: []string{"fb-model"},
						Configure: func(c *agent.Config) { c.Limits.MaxTokens = tc.asked }})
					second := fakellm.Text("Clamped and fine.")
					if secondFails {
						second = fakellm.RawError(400, tc.body)
					}
					env.Srv.ScriptModel("test-model", fakellm.RawError(400, tc.body), second)
					env.Srv.ScriptModel("fb-model", fakellm.Text("the fallback must not be used"))
					rec := newRecorder(env.Srv)
					res := rec.run(context.Background(), env, "write a lot")
					reqs := env.Srv.Requests()
					if got := models(reqs); !slices.Equal(got, []string{"test-model", "test-model"}) {
						t.Fatalf("requests went to %v, want two calls to the primary and no fallback", got)
					}
					if reqs[0].MaxTokens != tc.asked || reqs[1].MaxTokens != tc.limit {
						t.Errorf("max_tokens sent = %d then %d, want %d then the clamped %d", reqs[0].MaxTokens, reqs[1].MaxTokens, tc.asked, tc.limit)
					}
					wantUpdate(t, rec, func(u turn.CallFailed) bool { return u.Decision == turn.DecisionClamp && u.MaxTokens > 0 })
					if !secondFails {
						if res.Exit != turn.ExitCompleted || res.FinalText != "Clamped and fine." {
							t.Fatalf("exit %s text %q: %s", res.Exit, res.FinalText, res.Explanation)
						}
						return
					}
					wantFailedTurn(t, env, res, "output_cap")
					if len(res.Routes) != 1 {
						t.Errorf("routes = %+v; an output cap must never fall back", res.Routes)
					}
				})
			}
		})
	}
}

// Two keys, the first refused with 401: the second key is used at once,
// the first is benched in the store, and a new agent on the same store (a
// restart) skips it.
func TestAuthRotatesKeyAndCooldownSurvivesRestart(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			keys := []string{"key-one", "key-two"}
			env := testenv.New(t, testenv.Options{API: api, Keys: keys})
			env.Srv.Script(fakellm.RawError(401, bodies(api, openAIBadKeyBody, anthAuthBody)), fakellm.Text("Second key works."))
			rec := newRecorder(env.Srv)
			before := time.Now()
			res := rec.run(context.Background(), env, "hi")
			if res.Exit != turn.ExitCompleted || res.FinalText != "Second key works." {
				t.Fatalf("exit %s text %q: %s", res.Exit, res.FinalText, res.Explanation)
			}
			reqs := env.Srv.Requests()
			if len(reqs) != 2 || keyOf(reqs[0]) != "key-one" || keyOf(reqs[1]) != "key-two" {
				var got []string
				for _, r := range reqs {
					got = append(got, keyOf(r))
				}
				t.Fatalf("keys sent = %q, want key-one then key-two", got)
			}
			wantUpdate(t, rec, func(u turn.CallFailed) bool {
				return u.Decision == turn.DecisionRotate && u.Provider == "primary" && u.HTTPStatus == 401
			})
			cds, err := env.Store.Cooldowns(context.Background(), "primary", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if len(cds) != 1 || cds[0].KeyID != failover.KeyID("key-one") || cds[0].Reason != "auth" {
				t.Fatalf("cooldowns = %+v, want key-one benched for auth", cds)
			}
			if d := cds[0].Until.Sub(before); d < 4*time.Minute || d > 6*time.Minute {
				t.Errorf("auth cooldown lasts %v, want 5m", d)
			}

			// A restart: a new agent with a fresh pool on the same database.
			cfg := env.Config
			cfg.Routes = slices.Clone(cfg.Routes)
			cfg.Routes[0].Pool = failover.NewPool("primary", keys, failover.StrategyFillFirst, env.Store, nil)
			ag, err := agent.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			env.Srv.Script(fakellm.Text("Still on the second key."))
			res, err = ag.RunTurn(context.Background(), env.Session.ID, agent.Input{Text: "again"})
			if err != nil || res.Exit != turn.ExitCompleted {
				t.Fatalf("after restart: exit %s err %v: %s", res.Exit, err, res.Explanation)
			}
			reqs = env.Srv.Requests()
			if len(reqs) != 3 || keyOf(reqs[2]) != "key-two" {
				t.Fatalf("after restart %d requests, last key %q; want one call with key-two", len(reqs), keyOf(reqs[len(reqs)-1]))
			}
			env.NoViolations()
		})
	}
}

// A 429 retries the same key once, then rotates to the next.
func TestRateLimitRetriesSameKeyOnceThenRotates(t *testing.T) {
	env := testenv.New(t, testenv.Options{Keys: []string{"key-one", "key-two"}})
	env.Srv.Script(fakellm.RawError(429, openAIRateLimitBody), fakellm.RawError(429, openAIRateLimitBody), fakellm.Text("ok"))
	res := env.Run("hi")
	if res.Exit != turn.ExitCompleted {
		t.Fatalf("exit %s: %s", res.Exit, res.Explanation)
	}
	var got []string
	for _, r := range env.Srv.Requests() {
		got = append(got, keyOf(r))
	}
	if want := []string{"key-one", "key-one", "key-two"}; !slices.Equal(got, want) {
		t.Errorf("keys sent = %q, want %q", got, want)
	}
}

// Overload on the primary falls back after two failed retries when a
// fallback exists, instead of spending every retry.
func TestOverloadFallsBackAfterTwoRetries(t *testing.T) {
	env := testenv.New(t, testenv.Options{Fallbacks: []string{"fb-model"}})
	env.Srv.ScriptModel("test-model", fakellm.RawError(503, openAIOverloadBody), fakellm.RawError(503, openAIOverloadBody),
		fakellm.RawError(503, openAIOverloadBody), fakellm.Text("primary must not answer"))
	env.Srv.ScriptModel("fb-model", fakellm.Text("The fallback answers."))
	res := env.Run("hi")
	if res.Exit != turn.ExitCompleted || res.FinalText != "The fallback answers." {
		t.Fatalf("exit %s text %q: %s", res.Exit, res.FinalText, res.Explanation)
	}
	if got := models(env.Srv.Requests()); !slices.Equal(got, []string{"test-model", "test-model", "test-model", "fb-model"}) {
		t.Errorf("requests went to %v, want 3 primary calls then the fallback", got)
	}
	want := []turn.RouteAttempt{
		{Provider: "primary", Model: "test-model", Calls: 3, Outcome: "overloaded"},
		{Provider: "fallback", Model: "fb-model", Calls: 1, Outcome: "ok"},
	}
	if !slices.Equal(res.Routes, want) {
		t.Errorf("routes = %+v, want %+v", res.Routes, want)
	}
}

// With every key of the only route cooling down, the next turn makes no
// call at all and says when the first key returns.
func TestAllKeysCoolingSaysWhenFirstReturns(t *testing.T) {
	env := testenv.New(t, testenv.Options{Keys: []string{"key-one", "key-two"}})
	env.Srv.Script(fakellm.RawError(401, openAIBadKeyBody), fakellm.RawError(401, openAIBadKeyBody))
	res := env.Run("first")
	wantFailedTurn(t, env, res, "auth")
	if n := len(env.Srv.Requests()); n != 2 {
		t.Fatalf("first turn made %d calls, want one per key", n)
	}
	cds, err := env.Store.Cooldowns(context.Background(), "primary", time.Now())
	if err != nil || len(cds) != 2 {
		t.Fatalf("cooldowns = %+v (%v), want both keys benched", cds, err)
	}
	first := cds[0].Until
	if cds[1].Until.Before(first) {
		first = cds[1].Until
	}

	res = env.Run("second")
	if n := len(env.Srv.Requests()); n != 2 {
		t.Fatalf("the second turn made %d calls; benched keys must not be tried", n-2)
	}
	if res.Exit != turn.ExitFailed || res.Failure == nil || res.Failure.Reason() != "auth" || res.Failure.Retryable {
		t.Fatalf("exit %s failure %+v; want a non-retryable auth failure", res.Exit, res.Failure)
	}
	if want := first.Local().Format(time.DateTime); !strings.Contains(res.Failure.Message, want) {
		t.Errorf("message %q does not say when the first key returns (%s)", res.Failure.Message, want)
	}
	if len(res.Routes) != 1 || res.Routes[0].Calls != 0 {
		t.Errorf("routes = %+v, want the primary with no calls", res.Routes)
	}
}
