package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/internal/fakellm"
)

// Real provider error bodies (sources in failover/classify_test.go); the
// same ones the integration tests in turn/failover_test.go script.
const (
	openAIRateLimitBody = `{"error":{"message":"Rate limit reached for gpt-4o in organization org-xxxx on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again later.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	openAIBadKeyBody    = `{"error":{"message":"Incorrect API key provided: sk-proj-****abcd. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
	openAIQuotaBody     = `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`
	openAIServerBody    = `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`
	openAIValidateBody  = `{"error":{"message":"'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.","type":"invalid_request_error","param":"messages","code":null}}`
	openAIMaxTokensBody = `{"error":{"message":"max_tokens is too large: 50000. This model supports at most 16384 completion tokens, whereas you provided 50000.","type":"invalid_request_error","param":"max_tokens","code":null}}`
	openAIContextBody   = `{"error":{"message":"This model's maximum context length is 4097 tokens. However, you requested 4120 tokens (3120 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`
	anthOverloadedBody  = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`
	anthAuthBody        = `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_011CUdL49e3Fu9bCKbWF6cXD"}`
	anthCreditBody      = `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."},"request_id":"req_011CbrFTcXhtiMzr3s6EocF7"}`
	anthExtraUsageBody  = `{"type":"error","error":{"type":"invalid_request_error","message":"You're out of extra usage. Add more at claude.ai/settings/usage and keep going."},"request_id":"req_011CZqpKrzn59RBAo9o9ck3C"}`
	anthMaxTokensBody   = `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 64001 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5-20250929"}}`
	orUpstreamBody      = `{"error":{"message":"Provider returned error","code":429,"metadata":{"raw":"z-ai/glm-5.3-flash is temporarily rate-limited upstream. Please retry shortly, or add your own key to accumulate your rate limits: https://openrouter.ai/settings/integrations","provider_name":"BaseTen","limit_source":"upstream_provider_shared_pool"}}}`
	azureFilterBody     = `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry.","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"violence":{"filtered":true,"severity":"medium"}}}}}`
	geminiBody          = `[{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}]`
	vllmContextBody     = `{"object":"error","message":"This model's maximum context length is 6048 tokens. However, you requested 6616 tokens (568 in the messages, 6048 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`
	llamaContextBody    = `{"error":{"code":400,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"exceed_context_size_error","n_prompt_tokens":14429,"n_ctx":8192}}`
	ollamaMissingBody   = `{"error":"model \"llama2\" not found, try pulling it first"}`
)

// cliRun runs the CLI in-process and returns its exit code and output.
func cliRun(t *testing.T, ctx context.Context, env map[string]string, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	getenv := func(k string) string { return env[k] }
	code = run(ctx, args, strings.NewReader(stdin), &out, &errOut, getenv)
	return code, out.String(), errOut.String()
}

// explainJSON is the part of `explain-error --json` the tests read.
type explainJSON struct {
	Class             string `json:"class"`
	Retryable         bool   `json:"retryable"`
	RotateCredential  bool   `json:"should_rotate_credential"`
	Fallback          bool   `json:"should_fallback"`
	Compress          bool   `json:"should_compress"`
	BillingUnverified bool   `json:"billing_unverified"`
	RetryAfterMS      int64  `json:"retry_after_ms"`
	OutputCapLimit    int    `json:"output_cap_limit"`
	Certain           bool   `json:"certain"`
	Summary           string `json:"summary"`
}

// explain-error gives the right class, flags and words for the real bodies
// the integration tests use, in text and in JSON.
func TestExplainErrorRealBodies(t *testing.T) {
	type flags struct{ retry, rotate, fallback, compress, unverified bool }
	tests := []struct {
		name  string
		args  []string
		class string
		flags flags
		text  []string // phrases the text output must contain
	}{
		{"openai 429 with Retry-After", []string{"--provider", "openai", "--status", "429", "--header", "Retry-After: 20", "--body", openAIRateLimitBody},
			"rate_limit", flags{retry: true, rotate: true, fallback: true}, []string{"rate limited by openai (429)", "can help; the provider asks to wait 20s"}},
		{"anthropic 529 overloaded", []string{"--provider", "anthropic", "--status", "529", "--body", anthOverloadedBody},
			"overloaded", flags{retry: true, fallback: true}, []string{"anthropic overloaded (529)", "retries with backoff"}},
		{"openai 500", []string{"--provider", "openai", "--status", "500", "--body", openAIServerBody},
			"server_error", flags{retry: true, fallback: true}, []string{"openai server error (500)"}},
		{"openai 401", []string{"--provider", "openai", "--status", "401", "--body", openAIBadKeyBody},
			"auth", flags{rotate: true, fallback: true}, []string{"openai rejected the credential (401)", "not with this key", "switches to another key"}},
		{"anthropic 401", []string{"--provider", "anthropic", "--status", "401", "--body", anthAuthBody},
			"auth", flags{rotate: true, fallback: true}, []string{"anthropic rejected the credential (401)"}},
		{"openai 429 insufficient quota is billing", []string{"--provider", "openai", "--status", "429", "--body", openAIQuotaBody},
			"billing", flags{rotate: true, fallback: true}, []string{"out of credit", "benches this key for an hour"}},
		{"anthropic 400 credit balance", []string{"--provider", "anthropic", "--status", "400", "--body", anthCreditBody},
			"billing", flags{rotate: true, fallback: true}, []string{"out of credit"}},
		{"anthropic 400 out of extra usage is ambiguous", []string{"--provider", "anthropic", "--status", "400", "--body", anthExtraUsageBody},
			"billing", flags{rotate: true, fallback: true, unverified: true}, []string{"unverified", "content filter", "two minutes"}},
		{"openai 400 validation", []string{"--provider", "openai", "--status", "400", "--body", openAIValidateBody},
			"format_error", flags{}, []string{"will not help", "stops"}},
		{"openai 400 max_tokens too large", []string{"--provider", "openai", "--status", "400", "--body", openAIMaxTokensBody},
			"output_cap", flags{}, []string{"limit of 16384", "never falls back"}},
		{"anthropic 400 max_tokens over the model's output", []string{"--provider", "anthropic", "--status", "400", "--body", anthMaxTokensBody},
			"output_cap", flags{}, []string{"limit of 64000"}},
		{"openai context length", []string{"--provider", "openai", "--status", "400", "--body", openAIContextBody},
			"context_overflow", flags{compress: true}, []string{"compresses the conversation"}},
		{"openrouter relaying an upstream rate limit", []string{"--provider", "openrouter", "--status", "429", "--body", orUpstreamBody},
			"upstream_rate_limit", flags{retry: true, fallback: true}, []string{"upstream BaseTen", "relayed by openrouter"}},
		{"azure content filter", []string{"--provider", "azure", "--status", "400", "--body", azureFilterBody},
			"content_policy_blocked", flags{fallback: true}, []string{"content filter blocked"}},
		{"gemini list-wrapped 429", []string{"--provider", "gemini", "--status", "429", "--body", geminiBody},
			"rate_limit", flags{retry: true, rotate: true, fallback: true}, nil},
		{"vllm context", []string{"--provider", "vllm", "--status", "400", "--body", vllmContextBody},
			"context_overflow", flags{compress: true}, nil},
		{"llama.cpp context", []string{"--provider", "llama.cpp", "--status", "400", "--body", llamaContextBody},
			"context_overflow", flags{compress: true}, nil},
		{"ollama model missing", []string{"--provider", "ollama", "--status", "404", "--body", ollamaMissingBody},
			"model_not_found", flags{fallback: true}, []string{"pull"}},
		{"mid-stream EOF", []string{"--provider", "openai", "--transport", "eof", "--mid-stream"},
			"timeout", flags{retry: true, fallback: true}, []string{"timed out or dropped"}},
		{"bare EOF on a huge session is a probable overflow", []string{"--provider", "openai", "--transport", "eof", "--context-tokens", "190000", "--context-window", "200000", "--messages", "300"},
			"context_overflow", flags{compress: true}, []string{"best guess"}},
		{"certificate failure", []string{"--provider", "local", "--transport", "tls-cert", "--message", "x509: certificate signed by unknown authority"},
			"ssl_cert_verification", flags{}, []string{"certificate"}},
		{"client message only", []string{"--provider", "openai", "--message", "read tcp 10.0.0.2:51234->1.2.3.4:443: read: connection reset by peer"},
			"timeout", flags{retry: true, fallback: true}, nil},
		// Without --provider (issue 11): classified from what was pasted,
		// saying which provider-specific rules were not applied.
		{"no provider: anthropic overloaded", []string{"--status", "529", "--body", anthOverloadedBody},
			"overloaded", flags{retry: true, fallback: true}, []string{"Not applied (no --provider)", "--provider anthropic"}},
		{"no provider: node DNS failure, text only", []string{"--message", "FetchError: request to https://api.openai.com/v1/completions failed, reason: getaddrinfo ENOTFOUND api.openai.com"},
			"timeout", flags{retry: true, fallback: true}, []string{"Not applied", "no such host"}},
		// A pasted refused connection says so, as a real run does.
		{"no provider: node ECONNREFUSED, text only", []string{"--message", "Error: connect ECONNREFUSED 127.0.0.1:8000"},
			"timeout", flags{retry: true, fallback: true}, []string{"connection refused"}},
		{"no provider: 404 page not found is the endpoint", []string{"--status", "404", "--body", "404 page not found"},
			"endpoint_not_found", flags{fallback: true}, []string{"base URL"}},
		{"no provider: long context beta refused", []string{"--status", "400", "--body", `{"type":"error","error":{"type":"invalid_request_error","message":"The long context beta is not yet available for this subscription."}}`},
			"long_context_unavailable", flags{fallback: true, compress: true}, []string{"standard window"}},
		{"no provider: usage limit that resets", []string{"--status", "429", "--body", `{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"free","resets_in_seconds":529498}}`},
			"rate_limit", flags{retry: true, rotate: true, fallback: true}, []string{"resets at"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := cliRun(t, context.Background(), nil, "", append([]string{"explain-error", "--json"}, tt.args...)...)
			if code != exitOK {
				t.Fatalf("--json exit %d: %s", code, errOut)
			}
			var j explainJSON
			if err := json.Unmarshal([]byte(out), &j); err != nil {
				t.Fatalf("--json output is not JSON: %v\n%s", err, out)
			}
			got := flags{j.Retryable, j.RotateCredential, j.Fallback, j.Compress, j.BillingUnverified}
			if j.Class != tt.class || got != tt.flags {
				t.Errorf("class %s flags %+v, want %s %+v", j.Class, got, tt.class, tt.flags)
			}
			// The JSON carries the documented key names.
			for _, key := range []string{`"class"`, `"retryable"`, `"should_rotate_credential"`, `"should_fallback"`, `"should_compress"`, `"billing_unverified"`} {
				if !strings.Contains(out, key) {
					t.Errorf("--json output lacks %s", key)
				}
			}

			code, out, errOut = cliRun(t, context.Background(), nil, "", append([]string{"explain-error"}, tt.args...)...)
			if code != exitOK {
				t.Fatalf("text exit %d: %s", code, errOut)
			}
			for _, label := range []string{"What happened: ", "Retrying: ", "Talaria: ", "You can: "} {
				if !strings.Contains(out, label) {
					t.Errorf("text output lacks %q:\n%s", label, out)
				}
			}
			if !strings.Contains(out, j.Summary) {
				t.Errorf("text output does not say what happened (%q):\n%s", j.Summary, out)
			}
			for _, want := range tt.text {
				if !strings.Contains(out, want) {
					t.Errorf("text output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// The body can come from a file or stdin as well as --body, with the same
// verdict.
func TestExplainErrorBodySources(t *testing.T) {
	file := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(file, []byte(openAIQuotaBody), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		stdin string
		args  []string
	}{
		{"--body", "", []string{"--body", openAIQuotaBody}},
		{"--body-file", "", []string{"--body-file", file}},
		{"stdin", openAIQuotaBody, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"explain-error", "--json", "--provider", "openai", "--status", "429"}, tt.args...)
			code, out, errOut := cliRun(t, context.Background(), nil, tt.stdin, args...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var j explainJSON
			if err := json.Unmarshal([]byte(out), &j); err != nil {
				t.Fatal(err)
			}
			if j.Class != "billing" {
				t.Errorf("class %s, want billing", j.Class)
			}
		})
	}
}

// Bad invocations are usage errors (exit 2) with a one-line reason.
func TestExplainErrorUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"nothing to explain", []string{"--provider", "openai", "--body-file", ""}, "nothing to explain"},
		{"bad header", []string{"--provider", "openai", "--status", "429", "--header", "Retry-After 20"}, `use "Name: value"`},
		{"bad transport", []string{"--provider", "openai", "--transport", "smoke"}, "use timeout, connect"},
		{"both bodies", []string{"--provider", "openai", "--body", "{}", "--body-file", "x"}, "not both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := cliRun(t, context.Background(), nil, "", append([]string{"explain-error"}, tt.args...)...)
			if code != exitUsage || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d stderr %q; want %d mentioning %q", code, errOut, exitUsage, tt.want)
			}
		})
	}
}

// runEnv is a TALARIA_HOME in a temp dir, for `talaria run` in-process.
func runEnv(t *testing.T) map[string]string {
	t.Helper()
	return map[string]string{"TALARIA_HOME": t.TempDir()}
}

// runArgs runs one turn against srv's OpenAI-compatible endpoint.
func runArgs(t *testing.T, srv *fakellm.Server, extra ...string) []string {
	t.Helper()
	args := []string{"run", "--base-url", srv.OpenAIBaseURL(), "--api", "openai", "--model", "test-model", "--workspace", t.TempDir()}
	return append(append(args, extra...), "hello")
}

// `talaria run` exits with one code per failure family, as documented.
func TestRunExitCodes(t *testing.T) {
	// retry-after-ms keeps the CLI's real backoff (2 s base) out of the
	// test while the retries still happen.
	fast := "retry-after-ms: 1"
	tests := []struct {
		name  string
		steps []fakellm.Step
		want  int
		class failover.Class // the failure's typed class on the --json wire
		calls int            // requests the server must see
	}{
		{"completed", []fakellm.Step{fakellm.Text("hi")}, exitOK, "", 1},
		{"auth", []fakellm.Step{fakellm.RawError(401, openAIBadKeyBody)}, exitAuth, "auth", 1},
		{"billing", []fakellm.Step{fakellm.RawError(429, openAIQuotaBody)}, exitAuth, "billing", 1},
		{"rate limit after every retry", repeat(fakellm.RawError(429, openAIRateLimitBody, fast), 4), exitRateLimit, "rate_limit", 4},
		{"context overflow that compression cannot fix", repeat(fakellm.RawError(400, openAIContextBody), 4), exitContext, "context_overflow", 1},
		{"output cap after the clamp", repeat(fakellm.RawError(400, openAIMaxTokensBody), 2), exitContext, "output_cap", 2},
		{"bad request", []fakellm.Step{fakellm.RawError(400, openAIValidateBody)}, exitBadRequest, "format_error", 1},
		// The output-limit family: a tool call cut off every time, and an
		// answer that was only thinking.
		{"tool call cut by the output limit", repeat(fakellm.Step{Calls: []fakellm.Call{fakellm.ToolCall("read_file", `{"path":"a`)}, Finish: "length"}, 4),
			exitContext, "tool_call_truncated", 4},
		{"thinking used the output budget", []fakellm.Step{{Text: "<think>pondering the question", Finish: "length"}, fakellm.Text("never")},
			exitContext, "reasoning_exhausted_output", 1},
		{"server error after every retry", repeat(fakellm.RawError(500, openAIServerBody, fast), 4), exitOther, "server_error", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakellm.New()
			t.Cleanup(srv.Close)
			srv.Script(tt.steps...)
			code, out, errOut := cliRun(t, context.Background(), runEnv(t), "", runArgs(t, srv, "--json")...)
			if code != tt.want {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.want, out, errOut)
			}
			if n := len(srv.Requests()); n != tt.calls {
				t.Errorf("server saw %d requests, want %d", n, tt.calls)
			}
			var res struct {
				Failure *struct {
					Class     failover.Class `json:"class"`
					Retryable bool           `json:"failure_retryable"`
					Provider  string         `json:"provider"`
					Model     string         `json:"model"`
					Message   string         `json:"message"`
				} `json:"failure"`
				Routes []struct {
					Provider, Model string
				} `json:"routes"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("--json result: %v\n%s", err, out)
			}
			if tt.class == "" {
				return
			}
			f := res.Failure
			if f == nil || f.Class != tt.class || f.Provider != "custom" || f.Model != "test-model" || f.Message == "" {
				t.Fatalf("failure = %+v, want class %s from custom/test-model with a message", f, tt.class)
			}
			if len(res.Routes) != 1 || res.Routes[0].Model != "test-model" {
				t.Errorf("routes = %+v", res.Routes)
			}
		})
	}
}

// The text mode prints the failure's sentence on stderr, and nothing on
// stdout: the answer channel stays clean for scripts.
func TestRunFailureExplainedOnStderr(t *testing.T) {
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	srv.Script(fakellm.RawError(401, openAIBadKeyBody))
	// A key is sent (--api-key-env), so the 401 refuses it; without one the
	// sentence says none was sent (TestUnauthorizedWithoutAKeySaysNoneWasSent).
	env := runEnv(t)
	env["MY_KEY"] = "sk-proj-abcd"
	code, out, errOut := cliRun(t, context.Background(), env, "", runArgs(t, srv, "--api-key-env", "MY_KEY")...)
	if code != exitAuth {
		t.Fatalf("exit %d, want %d: %s", code, exitAuth, errOut)
	}
	if strings.TrimSpace(out) != "" {
		t.Errorf("stdout = %q, want nothing", out)
	}
	if !strings.Contains(errOut, "The API key was refused") {
		t.Errorf("stderr does not explain the failure:\n%s", errOut)
	}
}

// Cancelling `talaria run` while it waits out a long Retry-After exits 130
// promptly.
func TestRunInterruptedExitCode(t *testing.T) {
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	srv.Script(fakellm.RawError(429, openAIRateLimitBody, "Retry-After: 30"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		if srv.Wait(1, 10*time.Second) {
			time.Sleep(100 * time.Millisecond) // into the wait
		}
		cancel()
	}()
	start := time.Now()
	code, _, errOut := cliRun(t, ctx, runEnv(t), "", runArgs(t, srv)...)
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d: %s", code, exitInterrupted, errOut)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("run took %v; the 30s wait was not cut short", d)
	}
}

// Keys from a comma-separated env var and a fallback list in the config
// file: a refused first key rotates to the second, and a provider whose
// keys are all refused falls back to the next entry.
func TestRunConfigKeysAndFallback(t *testing.T) {
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	env := runEnv(t)
	env["PRIMARY_KEYS"] = "key-one,key-two"
	env["BACKUP_KEY"] = "backup-key"
	config := `provider: primary
providers:
  primary:
    api: openai
    base_url: ` + srv.OpenAIBaseURL() + `
    model: test-model
    key_env: PRIMARY_KEYS
    key_strategy: fill-first
  backup:
    api: openai
    base_url: ` + srv.OpenAIBaseURL() + `
    model: fb-model
    key_env: BACKUP_KEY
fallback:
  - provider: backup
`
	if err := os.WriteFile(filepath.Join(env["TALARIA_HOME"], "config.yaml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	srv.ScriptModel("test-model", fakellm.RawError(401, openAIBadKeyBody), fakellm.RawError(401, openAIBadKeyBody))
	srv.ScriptModel("fb-model", fakellm.Text("from the backup"))
	ws := t.TempDir()
	code, out, errOut := cliRun(t, context.Background(), env, "", "run", "--workspace", ws, "hello")
	if code != exitOK || strings.TrimSpace(out) != "from the backup" {
		t.Fatalf("exit %d stdout %q; want 0 and the backup's answer\n%s", code, out, errOut)
	}
	var got []string
	for _, r := range srv.Requests() {
		got = append(got, r.Model+":"+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	}
	want := []string{"test-model:key-one", "test-model:key-two", "fb-model:backup-key"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("requests = %v, want %v", got, want)
	}
	for _, line := range []string{"switching to another primary key", "falling back from primary/test-model to backup/fb-model"} {
		if !strings.Contains(errOut, line) {
			t.Errorf("progress on stderr lacks %q:\n%s", line, errOut)
		}
	}
}

func repeat(s fakellm.Step, n int) []fakellm.Step {
	out := make([]fakellm.Step, n)
	for i := range out {
		out[i] = s
	}
	return out
}
