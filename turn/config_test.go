package turn_test

import (
	"context"
	"testing"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/llm/openai"
	"github.com/talaria-agent/talaria/store/sqlite"
	"github.com/talaria-agent/talaria/turn"
)

// TestConfigDefaults: New applies each default once, from the package that
// owns it, and Config reports them, so a related engine (a subagent's)
// starts from the same values.
func TestConfigDefaults(t *testing.T) {
	st, err := sqlite.Open(context.Background(), t.TempDir()+"/state.db", sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	route := turn.Route{Provider: openai.NewChat(openai.Config{BaseURL: "http://127.0.0.1:1/v1", APIKey: "unused"}), Model: "gpt-4.1"}
	tests := []struct {
		name   string
		limits turn.Limits
		want   turn.Limits
	}{
		{"zero is the defaults", turn.Limits{}, turn.Limits{MaxIterations: turn.DefaultMaxIterations,
			MaxRetries: failover.DefaultMaxRetries, LengthContinuations: turn.DefaultLengthContinuations,
			ToolConcurrency: turn.DefaultToolConcurrency}},
		{"set values are kept", turn.Limits{MaxIterations: 7, MaxRetries: 1, MaxTokens: 900, LengthContinuations: 2, ToolConcurrency: 3},
			turn.Limits{MaxIterations: 7, MaxRetries: 1, MaxTokens: 900, LengthContinuations: 2, ToolConcurrency: 3}},
		{"NoRetries keeps zero retries", turn.Limits{NoRetries: true}, turn.Limits{MaxIterations: turn.DefaultMaxIterations,
			MaxRetries: 0, NoRetries: true, LengthContinuations: turn.DefaultLengthContinuations,
			ToolConcurrency: turn.DefaultToolConcurrency}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := turn.New(turn.Config{Store: st, Routes: []turn.Route{route}, Limits: tt.limits})
			if err != nil {
				t.Fatal(err)
			}
			got := e.Config()
			if got.Limits.Backoff.Jitter != nil || got.Limits.MaxIterations != tt.want.MaxIterations ||
				got.Limits.MaxRetries != tt.want.MaxRetries || got.Limits.MaxTokens != tt.want.MaxTokens ||
				got.Limits.LengthContinuations != tt.want.LengthContinuations || got.Limits.ToolConcurrency != tt.want.ToolConcurrency {
				t.Errorf("Limits = %+v, want %+v", got.Limits, tt.want)
			}
			if got.Catalogue == nil || got.Tools == nil || got.Now == nil || got.Logger == nil {
				t.Errorf("catalogue, tools, clock and logger must be defaulted: %+v", got)
			}
			// A config read back builds an equal engine: defaults are idempotent.
			again, err := turn.New(got)
			if err != nil {
				t.Fatal(err)
			}
			if again.Config().Limits.MaxIterations != got.Limits.MaxIterations || again.Config().Catalogue != got.Catalogue {
				t.Error("New(Config()) changed the configuration")
			}
		})
	}
	if _, err := turn.New(turn.Config{Routes: []turn.Route{route}}); err == nil {
		t.Error("New without a store must fail")
	}
	if _, err := turn.New(turn.Config{Store: st}); err == nil {
		t.Error("New without routes must fail")
	}
}
