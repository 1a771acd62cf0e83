package postgres_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/talaria-agent/talaria/internal/testing/pgtest"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/postgres"
)

// Nodes starting together on an empty database: the advisory lock lets
// one of them migrate while the others wait, so every Open succeeds and
// each version is applied once.
func TestOpenConcurrentMigrates(t *testing.T) {
	dsn := pgtest.New(t)
	const nodes = 6
	var wg sync.WaitGroup
	errs := make(chan error, nodes)
	for range nodes {
		wg.Go(func() {
			s, err := postgres.Open(t.Context(), dsn, postgres.Options{})
			if err == nil {
				err = s.CreateSession(t.Context(), &store.Session{})
				_ = s.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent Open: %v", err)
		}
	}
	c, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(t.Context())
	var applied, sessions int
	if err := c.QueryRow(t.Context(), `SELECT count(*) FROM schema_migrations`).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(t.Context(), `SELECT count(*) FROM sessions`).Scan(&sessions); err != nil {
		t.Fatal(err)
	}
	if applied != postgres.SchemaVersion() || sessions != nodes {
		t.Fatalf("schema_migrations has %d rows (want %d), sessions %d (want %d)", applied, postgres.SchemaVersion(), sessions, nodes)
	}
}

// A database migrated by a newer Talaria is refused, not damaged.
func TestOpenSchemaTooNew(t *testing.T) {
	dsn := pgtest.New(t)
	openAt(t, dsn).Close()
	c, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(t.Context())
	if _, err := c.Exec(t.Context(), `INSERT INTO schema_migrations (version, name) VALUES (999, '0999_future.sql')`); err != nil {
		t.Fatal(err)
	}
	_, err = postgres.Open(t.Context(), dsn, postgres.Options{})
	var tooNew *postgres.SchemaTooNewError
	if !errors.As(err, &tooNew) || tooNew.Found != 999 {
		t.Fatalf("Open of a newer schema: %v, want SchemaTooNewError", err)
	}
}

// Reaching no server is KindUnavailable, and the error never shows the
// password.
func TestOpenUnreachable(t *testing.T) {
	_, err := postgres.Open(t.Context(), "postgres://u:hunter2@127.0.0.1:1/db?connect_timeout=5", postgres.Options{})
	if store.KindOf(err) != store.KindUnavailable {
		t.Fatalf("KindOf(%v) = %s, want %s", err, store.KindOf(err), store.KindUnavailable)
	}
	if msg := err.Error(); strings.Contains(msg, "hunter2") {
		t.Fatalf("error shows the password: %s", msg)
	}
	_, err = postgres.Open(t.Context(), "postgres://u:hunter2@[bad", postgres.Options{})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("invalid URL: %v", err)
	}
}

func TestRedact(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"postgres://u:secret@h/db", "postgres://u:xxxxx@h/db"},
		{"postgres://u@h/db?sslmode=disable", "postgres://u@h/db?sslmode=disable"},
		{"postgres://u@h/db?password=secret", "postgres://u@h/db?password=xxxxx"},
		{"host=h password=secret", "(PostgreSQL connection string)"},
	} {
		if got := postgres.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
