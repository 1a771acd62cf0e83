package memstore_test

import (
	"testing"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/memstore"
	"github.com/talaria-agent/talaria/store/storetest"
)

func newStore(t *testing.T) *memstore.Store {
	s := memstore.New()
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestCore is the suite of what an agent needs, on its own (a backend of
// just the session service would run only this one).
func TestCore(t *testing.T) {
	storetest.RunCore(t, func(t *testing.T) store.SessionService { return newStore(t) })
}

// TestContract is everything the SQL backends pass: store.Store and both
// ledgers.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return newStore(t) })
}
