package postgres_test

import (
	"os"
	"testing"

	"github.com/talaria-agent/talaria/internal/testing/pgtest"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/postgres"
	"github.com/talaria-agent/talaria/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// openAt opens a store on dsn, closed when t ends.
func openAt(t testing.TB, dsn string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), dsn, postgres.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openAt(t, pgtest.New(t)) })
}

func TestContractShared(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T) (store.Store, store.Store) {
		dsn := pgtest.New(t)
		return openAt(t, dsn), openAt(t, dsn)
	})
}

func TestContractCluster(t *testing.T) {
	storetest.RunCluster(t, func(t *testing.T) (storetest.ClusterStore, storetest.ClusterStore) {
		dsn := pgtest.New(t)
		return openAt(t, dsn), openAt(t, dsn)
	})
}
