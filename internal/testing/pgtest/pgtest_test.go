package pgtest_test

import (
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/talaria-agent/talaria/internal/testing/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// Two New calls get separate, empty schemas on one server.
func TestNewIsolatesSchemas(t *testing.T) {
	a, b := pgtest.New(t), pgtest.New(t)
	ca, err := pgx.Connect(t.Context(), a)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close(t.Context())
	cb, err := pgx.Connect(t.Context(), b)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close(t.Context())
	if _, err := ca.Exec(t.Context(), `CREATE TABLE x (v int)`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := cb.QueryRow(t.Context(), `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'x'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatal("a table made in one schema is visible in another")
	}
}

// A cluster of its own can be stopped and started again with its data.
func TestOwnServerRestarts(t *testing.T) {
	s := pgtest.StartOwn(t)
	c, err := pgx.Connect(t.Context(), s.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(t.Context(), `CREATE TABLE kept (v int); INSERT INTO kept VALUES (7)`); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(t.Context()); err == nil {
		t.Fatal("ping succeeded with the server stopped")
	}
	if err := s.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	c2, err := pgx.Connect(t.Context(), s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close(t.Context())
	var v int
	if err := c2.QueryRow(t.Context(), `SELECT v FROM kept`).Scan(&v); err != nil || v != 7 {
		t.Fatalf("after restart: %d, %v", v, err)
	}
}
