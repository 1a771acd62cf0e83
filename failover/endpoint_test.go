package failover_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/store/sqlite"
)

// Cooldowns are keyed by provider + endpoint + key fingerprint: a key
// refused by one server (every --base-url server is provider "custom") stays
// usable at another, across processes (new pools over the same database).
func TestPoolCooldownPerEndpoint(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "state.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	keys := []string{"sk-same"}
	a := failover.NewPool("custom", keys, failover.StrategyFillFirst, st, nil).ForEndpoint("http://127.0.0.1:8000/v1")
	cred, err := a.Pick(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Failed(ctx, cred, failover.Classified{Class: failover.ClassAuth}); err != nil {
		t.Fatal(err)
	}
	b := failover.NewPool("custom", keys, failover.StrategyFillFirst, st, nil).ForEndpoint("http://127.0.0.1:9000/v1")
	if _, err := b.Pick(ctx); err != nil {
		t.Fatalf("another endpoint's pool is benched too: %v", err)
	}
	again := failover.NewPool("custom", keys, failover.StrategyFillFirst, st, nil).ForEndpoint("http://127.0.0.1:8000/v1/")
	if _, err := again.Pick(ctx); err == nil {
		t.Fatal("the refused endpoint's key is usable in a new pool")
	}
}
