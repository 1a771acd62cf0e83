package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/internal/config"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/openai"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// The exit code of every ending and of every provider failure class, as
// README's table documents them. A turn that reached the CLI through the
// gateway (JSON) exits the same way: the typed outcome and class survive
// the wire.
func TestExitCode(t *testing.T) {
	classCode := map[failover.Class]int{}
	for code, classes := range map[int][]failover.Class{
		exitAuth:      {failover.ClassAuth, failover.ClassAuthPermanent, failover.ClassBilling},
		exitRateLimit: {failover.ClassRateLimit, failover.ClassUpstreamRateLimit, failover.ClassOverloaded},
		exitContext: {failover.ClassContextOverflow, failover.ClassPayloadTooLarge, failover.ClassOutputCap,
			failover.ClassToolCallTruncated, failover.ClassReasoningExhausted},
		exitBadRequest: {failover.ClassFormatError, failover.ClassModelNotFound, failover.ClassEndpointNotFound,
			failover.ClassLongContextUnavailable, failover.ClassContentPolicyBlocked, failover.ClassProviderPolicyBlocked,
			failover.ClassRoleAlternation, failover.ClassThinkingSignature, failover.ClassInvalidEncryptedContent,
			failover.ClassReasoningMandatory, failover.ClassMultimodalToolContent, failover.ClassLlamaCppGrammar,
			failover.ClassImageTooLarge, failover.ClassImageCorrupt, failover.ClassImageUnsupported},
		exitInterrupted: {failover.ClassCanceled},
		exitOther: {failover.ClassServerError, failover.ClassTimeout, failover.ClassSSLCert, failover.ClassUnknown,
			failover.ClassEmptyResponse},
	} {
		for _, c := range classes {
			classCode[c] = code
		}
	}
	type tc struct {
		name string
		res  turn.Result
		want int
	}
	tests := []tc{
		{"completed", turn.Result{Exit: turn.ExitCompleted}, exitOK},
		{"interrupted", turn.Result{Exit: turn.ExitInterrupted}, exitInterrupted},
		{"budget", turn.Result{Exit: turn.ExitBudgetExhausted}, exitLimit},
		{"tool loop", turn.Result{Exit: turn.ExitToolLoop, Failure: &turn.Failure{Outcome: turn.ExitToolLoop}}, exitLimit},
		{"spend limit", turn.Result{Exit: turn.ExitSpendLimit, Failure: &turn.Failure{Outcome: turn.ExitSpendLimit}}, exitLimit},
		{"handoff limit", turn.Result{Exit: turn.ExitHandoffLimit}, exitLimit},
		{"busy", turn.Result{Exit: turn.ExitBusy, Failure: &turn.Failure{Outcome: turn.ExitBusy}}, exitBusy},
		{"compression failed", turn.Result{Exit: turn.ExitCompressionFailed, Failure: &turn.Failure{Outcome: turn.ExitCompressionFailed}}, exitContext},
		// The ending decides: a long-context refusal that compression could
		// not get around is still "does not fit".
		{"compression exhausted", turn.Result{Exit: turn.ExitCompressionExhausted, Failure: &turn.Failure{Outcome: turn.ExitCompressionExhausted, Class: failover.ClassLongContextUnavailable}}, exitContext},
		{"persistence", turn.Result{Exit: turn.ExitPersistenceFailed, Failure: &turn.Failure{Outcome: turn.ExitPersistenceFailed, Store: store.KindLocked}}, exitOther},
		{"panic", turn.Result{Exit: turn.ExitPanic, Failure: turn.PanicFailure("boom")}, exitOther},
		{"lease lost", turn.Result{Exit: turn.ExitLeaseLost, Failure: &turn.Failure{Outcome: turn.ExitLeaseLost}}, exitOther},
		{"session failed", turn.Result{Exit: turn.ExitSessionFailed, Failure: &turn.Failure{Outcome: turn.ExitSessionFailed}}, exitOther},
		{"credentials failed", turn.Result{Exit: turn.ExitCredentialsFailed, Failure: &turn.Failure{Outcome: turn.ExitCredentialsFailed}}, exitOther},
		{"configuration failed", turn.Result{Exit: turn.ExitConfigurationFailed, Failure: &turn.Failure{Outcome: turn.ExitConfigurationFailed}}, exitOther},
		{"failed without a failure", turn.Result{Exit: turn.ExitFailed}, exitOther},
	}
	for _, c := range failover.Classes() {
		want, ok := classCode[c]
		if !ok {
			t.Errorf("class %s has no documented exit code in this test", c)
			continue
		}
		tests = append(tests, tc{"failed " + string(c), turn.Result{Exit: turn.ExitFailed, Failure: &turn.Failure{Outcome: turn.ExitFailed, Class: c}}, want})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := exitCode(&tt.res); got != tt.want {
				t.Errorf("exitCode = %d, want %d", got, tt.want)
			}
			b, err := json.Marshal(tt.res)
			if err != nil {
				t.Fatal(err)
			}
			var back turn.Result
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if got := exitCode(&back); got != tt.want {
				t.Errorf("after JSON: exitCode = %d, want %d (%s)", got, tt.want, b)
			}
		})
	}
}

// The unreachable-server line comes from the failure's typed transport and
// cause, whatever its text says: an empty detail still names the cause, and
// a text that merely mentions a refused connection (an HTTP error relaying
// an upstream's) is not worded as an unreachable server.
func TestUnreachableLineFromTypedKind(t *testing.T) {
	base := "http://127.0.0.1:9/v1"
	a := &app{
		cfg:    &config.Config{File: "/home/u/.talaria/config.yaml", Providers: map[string]config.Provider{"local": {BaseURL: base}}},
		routes: []turn.Route{{Provider: openai.NewChat(openai.Config{Name: "local", BaseURL: base})}},
	}
	c := &cli{}
	res := &turn.Result{Exit: turn.ExitFailed, Explanation: "the engine's explanation",
		Failure: &turn.Failure{Class: failover.ClassTimeout, Transport: llm.TransportConnect, Connect: llm.ConnectNoHost, Provider: "local", BaseURL: base}}
	line := c.failureLine(a, res)
	for _, want := range []string{"Could not connect to local at " + base + " (no such host)", "is the server running",
		"--base-url, or providers.local.base_url in /home/u/.talaria/config.yaml"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
	res.Failure = &turn.Failure{Class: failover.ClassServerError, Provider: "local",
		Detail: "upstream connect error or disconnect/reset before headers: connection refused"}
	if line := c.failureLine(a, res); line != res.Explanation {
		t.Errorf("a server error whose text mentions a refused connection got %q", line)
	}
}
