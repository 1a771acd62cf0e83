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

func TestCore(t *testing.T) {
	storetest.RunCore(t, func(t *testing.T) store.SessionService { return newStore(t) })
}

func TestMemory(t *testing.T) {
	storetest.RunMemory(t, func(t *testing.T) store.Memories { return newStore(t) })
}

func TestTurnEvents(t *testing.T) {
	storetest.RunTurnEvents(t, func(t *testing.T) storetest.EventStore { return newStore(t) })
}

func TestLedger(t *testing.T) {
	storetest.RunLedger(t, func(t *testing.T) storetest.LedgerStore { return newStore(t) })
}

func TestCooldowns(t *testing.T) {
	storetest.RunCooldowns(t, func(t *testing.T) store.Cooldowns { return newStore(t) })
}

func TestSpend(t *testing.T) {
	storetest.RunSpend(t, func(t *testing.T) store.SpendLedger { return newStore(t) })
}

func TestLifecycle(t *testing.T) {
	storetest.RunLifecycle(t, func(t *testing.T) storetest.Closable { return newStore(t) })
}

func TestSearch(t *testing.T) {
	storetest.RunSearch(t, func(t *testing.T) storetest.SearchStore { return newStore(t) })
}
