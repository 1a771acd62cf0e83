package storetest

import (
	"fmt"
	"testing"

	"github.com/talaria-agent/talaria/internal/slicesx"
	"github.com/talaria-agent/talaria/store"
)

var cooldownCases = []testCase[store.Cooldowns]{
	{"SetListClearOverwrite", testCooldowns},
	{"KeyedByEndpoint", testCooldownEndpoints},
}

// A cooldown is keyed by provider, endpoint and key: the same key id at two
// base URLs is two cooldowns, each round-trips its BaseURL, and
// ClearCooldown ends the key's cooldowns at every endpoint.
func testCooldownEndpoints(t *testing.T, s store.Cooldowns) {
	c := ctx(t)
	now := at(1000)
	a := store.Cooldown{Provider: "custom", BaseURL: "http://127.0.0.1:8000/v1", KeyID: "fp", Until: at(1500), Reason: "auth", SetAt: at(999)}
	b := store.Cooldown{Provider: "custom", BaseURL: "http://127.0.0.1:9000/v1", KeyID: "fp", Until: at(1200), Reason: "billing", SetAt: at(999)}
	for _, cd := range []store.Cooldown{a, b} {
		if err := s.SetCooldown(c, cd); err != nil {
			t.Fatalf("SetCooldown(%+v): %v", cd, err)
		}
	}
	got, err := s.Cooldowns(c, "custom", now)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].BaseURL != b.BaseURL || got[1].BaseURL != a.BaseURL || got[0].Reason != "billing" || got[1].Reason != "auth" {
		t.Fatalf("cooldowns = %+v; want one per endpoint, soonest first, BaseURL kept", got)
	}
	// Overwriting one endpoint's cooldown leaves the other's.
	a.Until = at(4000)
	if err := s.SetCooldown(c, a); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Cooldowns(c, "custom", now); len(got) != 2 || !got[1].Until.Equal(at(4000)) || !got[0].Until.Equal(at(1200)) {
		t.Fatalf("after overwriting one endpoint: %+v", got)
	}
	if err := s.ClearCooldown(c, "custom", "fp"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Cooldowns(c, "custom", now); len(got) != 0 {
		t.Fatalf("after clear: %+v", got)
	}
}

func testCooldowns(t *testing.T, s store.Cooldowns) {
	c := ctx(t)
	now := at(1000)
	set := func(cd store.Cooldown) {
		t.Helper()
		if err := s.SetCooldown(c, cd); err != nil {
			t.Fatalf("SetCooldown(%+v): %v", cd, err)
		}
	}
	list := func(provider string) []store.Cooldown {
		t.Helper()
		got, err := s.Cooldowns(c, provider, now)
		if err != nil {
			t.Fatalf("Cooldowns(%s): %v", provider, err)
		}
		return got
	}
	keys := func(cds []store.Cooldown) string {
		return fmt.Sprint(slicesx.Map(cds, func(cd store.Cooldown) string { return cd.KeyID }))
	}

	k1 := store.Cooldown{Provider: "openai", KeyID: "fp-1", Until: at(1600), Reason: "rate_limit", SetAt: at(999)}
	set(k1)
	set(store.Cooldown{Provider: "openai", KeyID: "fp-2", Until: at(1100), Reason: "billing", SetAt: at(999)})
	set(store.Cooldown{Provider: "openai", KeyID: "fp-past", Until: at(900), Reason: "auth", SetAt: at(800)})
	set(store.Cooldown{Provider: "openai", KeyID: "fp-now", Until: now, Reason: "auth", SetAt: at(800)})
	set(store.Cooldown{Provider: "anthropic", KeyID: "fp-1", Until: at(2000), Reason: "overloaded", SetAt: at(999)})

	t.Run("only future ones, soonest first", func(t *testing.T) {
		got := list("openai")
		if keys(got) != "[fp-2 fp-1]" {
			t.Fatalf("keys = %s, want [fp-2 fp-1]", keys(got))
		}
		g := got[1]
		if g.Provider != k1.Provider || g.Reason != k1.Reason || !g.Until.Equal(k1.Until) || !g.SetAt.Equal(k1.SetAt) {
			t.Fatalf("round trip: %+v, want %+v", g, k1)
		}
	})
	t.Run("providers are separate", func(t *testing.T) {
		if got := list("anthropic"); keys(got) != "[fp-1]" || got[0].Reason != "overloaded" {
			t.Fatalf("anthropic = %+v", got)
		}
		if got := list("nobody"); len(got) != 0 {
			t.Fatalf("unknown provider = %+v", got)
		}
	})
	t.Run("overwrite", func(t *testing.T) {
		set(store.Cooldown{Provider: "openai", KeyID: "fp-2", Until: at(3000), Reason: "billing_unverified", SetAt: at(1000)})
		got := list("openai")
		if keys(got) != "[fp-1 fp-2]" || got[1].Reason != "billing_unverified" || !got[1].Until.Equal(at(3000)) {
			t.Fatalf("after overwrite = %+v", got)
		}
		// Overwriting with a past end lifts the cooldown.
		set(store.Cooldown{Provider: "openai", KeyID: "fp-2", Until: at(10), Reason: "cleared"})
		if got := list("openai"); keys(got) != "[fp-1]" {
			t.Fatalf("after overwrite into the past = %s", keys(got))
		}
	})
	t.Run("clear", func(t *testing.T) {
		if err := s.ClearCooldown(c, "openai", "fp-1"); err != nil {
			t.Fatalf("ClearCooldown: %v", err)
		}
		if got := list("openai"); len(got) != 0 {
			t.Fatalf("after clear = %+v", got)
		}
		if got := list("anthropic"); len(got) != 1 {
			t.Fatalf("clear removed another provider's cooldown")
		}
		if err := s.ClearCooldown(c, "openai", "never-set"); err != nil {
			t.Fatalf("ClearCooldown of nothing: %v", err)
		}
	})
	t.Run("SetAt filled when zero", func(t *testing.T) {
		set(store.Cooldown{Provider: "p", KeyID: "k", Until: at(5000)})
		got := list("p")
		if len(got) != 1 || got[0].SetAt.IsZero() {
			t.Fatalf("cooldown = %+v, want SetAt filled", got)
		}
	})
}
