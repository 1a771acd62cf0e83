package agent

import (
	"context"
	"testing"

	"github.com/talaria-agent/talaria/llm/openai"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/sqlite"
	"github.com/talaria-agent/talaria/turn"
)

// sessionsOnly hides everything of a store but the session service, as a
// backend that keeps no memory would.
type sessionsOnly struct{ store.SessionService }

// TestStoreMemoryIsOptional: the agent takes the session service; the
// workspace memory is found on the same value and required only when
// memory (or the review, which writes it) is on.
func TestStoreMemoryIsOptional(t *testing.T) {
	st, err := sqlite.Open(context.Background(), t.TempDir()+"/state.db", sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	route := []turn.Route{{Provider: openai.NewChat(openai.Config{BaseURL: "http://127.0.0.1:1/v1", APIKey: "unused"}), Model: "m"}}
	for _, tt := range []struct {
		name    string
		st      store.SessionService
		mem     MemoryConfig
		review  ReviewConfig
		wantErr bool
	}{
		{"no memory kept, memory off", sessionsOnly{st}, MemoryConfig{}, ReviewConfig{}, false},
		{"no memory kept, memory on", sessionsOnly{st}, MemoryConfig{Enabled: true}, ReviewConfig{}, true},
		{"no memory kept, review on", sessionsOnly{st}, MemoryConfig{}, ReviewConfig{Enabled: true}, true},
		{"memory kept, memory on", st, MemoryConfig{Enabled: true}, ReviewConfig{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(Config{Store: tt.st, Config: turn.Config{Routes: route}, Workspace: t.TempDir(), Memory: tt.mem, Review: tt.review})
			if tt.wantErr {
				if err == nil {
					a.Close()
					t.Fatal("New succeeded with memory on and a store that keeps none")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			_, err = a.AddMemory(t.Context(), "a fact", "")
			if _, kept := tt.st.(store.Memories); kept != (err == nil) {
				t.Fatalf("AddMemory on %T: %v", tt.st, err)
			}
		})
	}
}
