package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/talaria-agent/talaria/internal/config"
	"github.com/talaria-agent/talaria/turn"
)

// The guards: section of config.yaml reaches the engine: absent keys keep
// every guard on, each switch turns its guard off, limits pass through.
func TestGuardsConfigReachesEngine(t *testing.T) {
	var def turn.GuardConfig
	with := func(f func(*turn.GuardConfig)) turn.GuardConfig { g := def; f(&g); return g }
	tests := []struct {
		name, yaml string
		want       turn.GuardConfig
	}{
		{"absent", "", def},
		{"identical calls off", "guards:\n  identical_calls: false\n", with(func(g *turn.GuardConfig) { g.NoIdenticalCalls = true })},
		{"said-but-stopped off", "guards:\n  said_but_stopped: false\n", with(func(g *turn.GuardConfig) { g.NoSaidButStopped = true })},
		{"empty response off", "guards:\n  empty_response: false\n", with(func(g *turn.GuardConfig) { g.NoEmptyResponse = true })},
		{"all off", "guards:\n  identical_calls: false\n  said_but_stopped: false\n  empty_response: false\n",
			with(func(g *turn.GuardConfig) {
				g.NoIdenticalCalls, g.NoSaidButStopped, g.NoEmptyResponse = true, true, true
			})},
		{"limits", "guards:\n  tool_loop_stop: 6\n  empty_retries: 1\n  empty_cost_threshold_usd: 1.5\n",
			with(func(g *turn.GuardConfig) { g.ToolLoopStop, g.EmptyRetries, g.EmptyCostThresholdUSD = 6, 1, 1.5 })},
		// Zero retries means none, not the default of three.
		{"no empty retries", "guards:\n  empty_retries: 0\n", with(func(g *turn.GuardConfig) { g.NoEmptyRetry = true })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(home, func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			got := AgentConfig(cfg, []turn.Route{{Model: "m"}}, 0).Guards
			if got != tc.want {
				t.Errorf("guards = %+v, want %+v", got, tc.want)
			}
		})
	}
}
