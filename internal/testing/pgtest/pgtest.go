// Package pgtest gives tests a real PostgreSQL: the server named by
// TALARIA_TEST_POSTGRES_URL when set (CI starts one in .ci/run), otherwise a
// throwaway cluster initdb'd in a temp dir and started on a free loopback
// port for the life of the test binary. Each New call gets its own empty
// schema, so tests never see each other's rows.
//
// When neither is possible the test is skipped with one loud line, except
// under CI=true, where a missing database fails the test.
//
// A package that uses New must run its tests through Main:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the variable with an existing server's DSN.
const EnvURL = "TALARIA_TEST_POSTGRES_URL"

// shared is the cluster this test binary started on first use, stopped by
// Main. It is process-wide on purpose: starting PostgreSQL costs seconds,
// one per binary is enough, and Main is the only place that can stop it
// after every test has finished.
var shared struct {
	sync.Mutex
	main    bool // Main is in use, so a started cluster will be stopped
	server  *Server
	err     error
	started bool
}

// Main runs the tests and then stops the cluster they started, if any.
func Main(m *testing.M) int {
	shared.Lock()
	shared.main = true
	shared.Unlock()
	code := m.Run()
	shared.Lock()
	defer shared.Unlock()
	if shared.server != nil {
		if err := shared.server.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest: stopping the test cluster:", err)
		}
		shared.server.Remove()
	}
	return code
}

// Unavailable skips t with one loud line, or fails it under CI=true, where a
// missing database must not pass silently.
func Unavailable(t testing.TB, why string) {
	t.Helper()
	msg := "PostgreSQL tests SKIPPED: " + why + " (install postgresql or set " + EnvURL + ")"
	if os.Getenv("CI") == "true" {
		t.Fatal(strings.Replace(msg, "SKIPPED", "FAILED under CI=true", 1))
	}
	t.Skip(msg)
}

// BaseURL returns the DSN of the server tests use, starting the throwaway
// cluster on first use.
func BaseURL(t testing.TB) string {
	t.Helper()
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	shared.Lock()
	defer shared.Unlock()
	if !shared.main {
		t.Fatal("pgtest: call pgtest.Main from the package's TestMain so the test cluster is stopped")
	}
	if !shared.started {
		shared.started = true
		shared.server, shared.err = Start(context.Background())
	}
	if shared.err != nil {
		Unavailable(t, shared.err.Error())
	}
	return shared.server.URL()
}

// New returns the DSN of a fresh, empty schema on the test server (its
// search_path), dropped when t ends.
func New(t testing.TB) string {
	t.Helper()
	return NewOn(t, BaseURL(t))
}

// NewOn is New on the server at base.
func NewOn(t testing.TB, base string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("pgtest: connect %s: %v", redact(base), err)
	}
	defer conn.Close(context.Background())
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "talaria_test_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("pgtest: create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			return // the server is gone (a test stopped it); nothing to drop
		}
		defer conn.Close(context.Background())
		_, _ = conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
	})
	return WithSearchPath(base, schema)
}

// WithSearchPath returns dsn with its search_path set to schema.
func WithSearchPath(dsn, schema string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " search_path=" + schema // keyword/value form
}

// redact hides a password in a DSN for messages.
func redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		return u.String()
	}
	return dsn
}
