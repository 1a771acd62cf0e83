package turn_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// probeTool is a read-only tool whose run calls onRun.
func probeTool(name string, onRun func()) *tool.Func[json.RawMessage, tool.Result] {
	return testenv.MustFunc(tool.Info{Name: name, Description: "probe", Parameters: testenv.ObjectSchema(`{}`), ReadOnly: true},
		func(context.Context, json.RawMessage) (tool.Result, error) {
			if onRun != nil {
				onRun()
			}
			return tool.Result{Content: name + " ok"}, nil
		})
}

// Responses through the whole engine: a three-call tool turn replays every
// reasoning item of the turn, the next turn prunes them, and the items
// survive the store round trip byte for byte.
func TestResponsesReasoningAcrossATurn(t *testing.T) {
	env := testenv.New(t, testenv.Options{API: "openai-responses", NoBuiltins: true, ExtraTools: []tool.Tool{probeTool("probe", nil)}})
	env.Srv.Script(
		fakellm.Step{Reasoning: "Probe once.", Calls: []fakellm.Call{fakellm.ToolCall("probe", `{}`)}},
		fakellm.Step{Reasoning: "Probe twice, in parallel.", Calls: []fakellm.Call{fakellm.ToolCall("probe", `{"n":1}`), fakellm.ToolCall("probe", `{"n":2}`)}},
		fakellm.Step{Reasoning: "All probed.", Text: "Three probes ran."},
		fakellm.Text("You're welcome."),
	)
	if res := env.Run("probe it"); !res.OK() || res.FinalText != "Three probes ran." {
		t.Fatalf("turn 1: %+v", res)
	}
	if res := env.Run("thanks"); !res.OK() {
		t.Fatalf("turn 2: %+v", res)
	}
	env.NoViolations()
	reqs := env.Srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	if n := []int{len(reqs[0].ReasoningItems), len(reqs[1].ReasoningItems), len(reqs[2].ReasoningItems), len(reqs[3].ReasoningItems)}; n[0] != 0 || n[1] != 1 || n[2] != 2 || n[3] != 0 {
		t.Errorf("reasoning items replayed per call = %v, want [0 1 2 0]", n)
	}
	for _, r := range env.Rows() {
		if r.Reasoning == nil {
			continue
		}
		for _, it := range r.Reasoning.Items {
			if !strings.Contains(string(reqs[2].Body), string(it)) && len(r.ToolCalls) > 0 {
				t.Errorf("stored item not replayed byte for byte: %s", it)
			}
		}
	}
}

// The provider stops accepting its own encrypted reasoning mid-turn (its
// key rotated): the rejection strips replay state and the call is retried
// once, without it.
func TestResponsesEncryptedContentRejectedMidTurn(t *testing.T) {
	var srv *fakellm.Server
	env := testenv.New(t, testenv.Options{API: "openai-responses", NoBuiltins: true,
		ExtraTools: []tool.Tool{probeTool("probe", func() { srv.ForgetReasoning() })}})
	srv = env.Srv
	env.Srv.Script(
		fakellm.Step{Reasoning: "Probe.", Calls: []fakellm.Call{fakellm.ToolCall("probe", `{}`)}},
		fakellm.Text("Probed."),
	)
	if res := env.Run("probe it"); !res.OK() || res.FinalText != "Probed." {
		t.Fatalf("turn: %+v", res)
	}
	reqs := env.Srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3 (call, rejected replay, stripped retry)", len(reqs))
	}
	if v := env.Srv.Violations(); len(v) != 1 || !strings.Contains(v[0], "could not be verified") {
		t.Errorf("violations = %q", v)
	}
	if len(reqs[1].ReasoningItems) != 1 || len(reqs[2].ReasoningItems) != 0 {
		t.Errorf("replayed items: %v then %v; want 1 then none", reqs[1].ReasoningItems, reqs[2].ReasoningItems)
	}
}

// Fallback across formats mid-turn: OpenAI Responses calls a tool, then
// fails for good; Anthropic (thinking on) takes the same turn over. The
// Responses reasoning items never reach Anthropic, which cannot read them,
// and the tool loop it inherits goes without thinking (it has no signed
// block to lead with).
func TestFallbackAcrossFormats(t *testing.T) {
	env := testenv.New(t, testenv.Options{API: "openai-responses", Model: "gpt-5", NoBuiltins: true,
		ExtraTools: []tool.Tool{probeTool("probe", nil)}})
	srv := env.Srv
	routes := []turn.Route{
		{Provider: testenv.ProviderWith(srv, "openai-responses", "responses", testenv.Options{}), Model: "gpt-5"},
		{Provider: testenv.ProviderWith(srv, "anthropic", "claude", testenv.Options{ThinkingBudget: 2048}), Model: "claude-x"},
	}
	env.SetRoutes(routes)
	srv.ScriptModel("gpt-5",
		fakellm.Step{Reasoning: "Probe it.", Calls: []fakellm.Call{fakellm.ToolCall("probe", `{}`)}},
		fakellm.RawError(401, `{"error":{"message":"Incorrect API key provided: sk-****. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`),
	)
	srv.ScriptModel("claude-x", fakellm.Step{Reasoning: "The probe ran; answer.", Text: "Claude finished the turn."})
	res := env.Run("probe it")
	if !res.OK() || res.FinalText != "Claude finished the turn." {
		t.Fatalf("turn: %+v", res)
	}
	env.NoViolations()
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	if last.API != fakellm.APIAnthropic {
		t.Fatalf("last request went to %s", last.API)
	}
	if strings.Contains(string(last.Body), "encrypted") || strings.Contains(string(last.Body), "Probe it.") || last.ThinkingBudget != 0 {
		t.Errorf("Anthropic got the Responses reasoning or thinking on a thinking-less tool loop:\n%s", last.Body)
	}
	if len(last.Messages) != 3 || last.Messages[2].Role != "tool" {
		t.Errorf("projected transcript = %+v", last.Messages)
	}
}

// The whole chain mid-turn: OpenAI Responses calls a tool and loses its
// key, Anthropic (thinking on) calls another tool and loses its key,
// Gemini finishes the turn. Each format gets the transcript projected for
// it: nothing another format issued (encrypted items, signed thinking) is
// sent raw, Gemini's call turns carry the skip signature, and every call
// has its result.
func TestFallbackChainResponsesAnthropicGemini(t *testing.T) {
	env := testenv.New(t, testenv.Options{NoBuiltins: true, ExtraTools: []tool.Tool{probeTool("probe", nil)}})
	srv := env.Srv
	env.SetRoutes([]turn.Route{
		{Provider: testenv.ProviderWith(srv, "openai-responses", "responses", testenv.Options{}), Model: "gpt-5"},
		{Provider: testenv.ProviderWith(srv, "anthropic", "claude", testenv.Options{ThinkingBudget: 2048}), Model: "claude-x"},
		{Provider: testenv.ProviderWith(srv, "gemini", "gem", testenv.Options{}), Model: "gemini-3-pro"},
	})
	const badKeyOpenAI = `{"error":{"message":"Incorrect API key provided: sk-****.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
	const badKeyAnthropic = `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_1"}`
	srv.ScriptModel("gpt-5",
		fakellm.Step{Reasoning: "Probe it.", Calls: []fakellm.Call{fakellm.ToolCall("probe", `{"n":1}`)}},
		fakellm.RawError(401, badKeyOpenAI),
	)
	srv.ScriptModel("claude-x",
		fakellm.Step{Reasoning: "Probe again.", Calls: []fakellm.Call{fakellm.ToolCall("probe", `{"n":2}`)}},
		fakellm.RawError(401, badKeyAnthropic),
	)
	srv.ScriptModel("gemini-3-pro", fakellm.Text("Gemini finished the turn."))
	res := env.Run("probe twice")
	if !res.OK() || res.FinalText != "Gemini finished the turn." {
		t.Fatalf("turn: %+v", res)
	}
	env.NoViolations()
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	if last.API != fakellm.APIGemini {
		t.Fatalf("last request went to %s", last.API)
	}
	for _, p := range testenv.WireProblems(last.Messages) {
		t.Errorf("gemini transcript: %s", p)
	}
	roles := []string{}
	for _, m := range last.Messages {
		roles = append(roles, m.Role)
		if m.Reasoning != "" {
			t.Errorf("another format's reasoning reached Gemini: %+v", m)
		}
	}
	if strings.Join(roles, " ") != "user assistant tool assistant tool" {
		t.Errorf("gemini transcript roles = %v", roles)
	}
	for _, i := range []int{1, 3} {
		if s := last.Messages[i].Signatures; len(s) != 1 || s[0] != "skip/thought/signature/validator" {
			t.Errorf("call turn %d signatures = %q, want the skip value", i, s)
		}
	}
	if b := string(last.Body); strings.Contains(b, "encrypted") || strings.Contains(b, "Probe it.") || strings.Contains(b, "Probe again.") {
		t.Errorf("Gemini got raw reasoning of another format:\n%s", b)
	}
}
