package agent

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/catalogue"
	"github.com/talaria-agent/talaria/llm/openai"
	"github.com/talaria-agent/talaria/store/sqlite"
	"github.com/talaria-agent/talaria/turn"
)

// TestConfigReachesEngines: what an embedder sets in Config reaches the
// engine once, unchanged (the logger included: it once stayed nil for the
// engines of subagents and reviews), and the engine's defaults are the
// ones the agent reports.
func TestConfigReachesEngines(t *testing.T) {
	st, err := sqlite.Open(context.Background(), t.TempDir()+"/state.db", sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	now := func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	cat := catalogue.New(map[string]catalogue.Model{"m": {Window: 50_000}})
	a, err := New(Config{
		Store:     st,
		Workspace: t.TempDir(),
		Subagents: SubagentConfig{Enabled: true, MaxIterations: 4},
		Config:    turn.Config{Routes: []turn.Route{{Provider: openai.NewChat(openai.Config{BaseURL: "http://127.0.0.1:1/v1", APIKey: "unused"}), Model: "m"}}, Limits: turn.Limits{MaxIterations: 9}, Catalogue: cat, Now: now, Logger: log},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	tc := a.engine.Config()
	if tc.Logger != log || tc.Catalogue != cat || !tc.Now().Equal(now()) || tc.Limits.MaxIterations != 9 {
		t.Errorf("engine config = %+v, want the agent's logger, catalogue, clock and limits", tc)
	}
	if tc.Limits.MaxRetries == 0 || tc.Limits.ToolConcurrency == 0 {
		t.Errorf("engine limits %+v: defaults not applied", tc.Limits)
	}
	if a.Catalogue() != cat || a.ModelInfo().Window != 50_000 {
		t.Errorf("the agent reports another catalogue than its engine's")
	}
	child, _, _, err := a.childEngine(a.tools, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	cc := child.Config()
	if cc.Logger != log || cc.Limits.MaxIterations != 4 || cc.Catalogue != cat {
		t.Errorf("child engine config = %+v, want the parent's logger and catalogue with the subagents' limit", cc)
	}
	cc.Logger.Info("child engine logs here")
	if !strings.Contains(logged.String(), "child engine logs here") {
		t.Error("the child engine's logger is not the agent's")
	}
}
