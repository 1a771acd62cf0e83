package observe_test

import (
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/telemetrytest"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/turn"
)

// A chat span carries the system prompt and the reasoning the model
// returned, both under the capture mode: redacted by default, absent in
// metadata mode.
func TestSpansCarrySystemPromptAndReasoning(t *testing.T) {
	const secret = "sk-proj-Xk3vQ9mZr7Lp2Ws8Nb4Tc6Yd1Fg5Hj0KaUe2Ri9"
	for _, capture := range []string{"redacted", "metadata"} {
		t.Run(capture, func(t *testing.T) {
			r := telemetrytest.NewReceiver(t)
			tel := setup(t, r, capture)
			env := testenv.New(t, testenv.Options{NoBuiltins: true, Configure: func(c *agent.Config) {
				c.Observer = tel.Observer
				c.SystemPrompt = "You are the deploy bot. The deploy key is " + secret + "."
			}})
			env.Srv.Script(fakellm.Step{Reasoning: "The user wants a greeting; key " + secret + " is not needed.", Text: "Hello."})
			if res := env.Run("hi"); res.Exit != turn.ExitCompleted {
				t.Fatalf("exit %s %+v", res.Exit, res.Failure)
			}
			flush(t, tel)
			var chat map[string]any
			for _, s := range r.Spans() {
				if strings.HasPrefix(s.Name, "chat ") {
					chat = telemetrytest.Attrs(s.Attributes)
				}
			}
			if chat == nil {
				t.Fatal("no chat span")
			}
			sys, _ := chat["gen_ai.system_instructions"].(string)
			out, _ := chat["gen_ai.output.messages"].(string)
			if capture == "metadata" {
				if sys != "" || out != "" {
					t.Errorf("metadata mode recorded content: system %q output %q", sys, out)
				}
				return
			}
			if !strings.Contains(sys, "deploy bot") || strings.Contains(sys, secret) || !strings.Contains(sys, "[REDACTED]") {
				t.Errorf("system instructions %q: want the prompt with the key redacted", sys)
			}
			if !strings.Contains(out, `"reasoning"`) || !strings.Contains(out, "wants a greeting") || strings.Contains(out, secret) {
				t.Errorf("output messages %q: want the reasoning, redacted", out)
			}
		})
	}
}
