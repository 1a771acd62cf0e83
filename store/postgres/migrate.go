package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// migrationFiles are the schema versions, NNNN_name.sql, applied in order,
// forward only. Never edit a released file: add a new one.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations reads the embedded files in version order.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, n := range names {
		base := path.Base(n)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration file %s: want NNNN_name.sql", base)
		}
		b, err := migrationFiles.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: base, sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: versions must run 1, 2, 3… without gaps", m.name)
		}
	}
	return out, nil
}

// SchemaVersion is the schema version this build writes.
func SchemaVersion() int {
	ms, _ := migrations()
	return len(ms)
}

// SchemaTooNewError says the database was written by a newer Talaria.
type SchemaTooNewError = sqlrows.SchemaTooNewError

// migrate brings the schema of the connection's current schema up to date.
// It holds a session advisory lock keyed by that schema while it works, so
// several nodes starting at once wait for one another instead of racing to
// create the same tables; each version commits in its own transaction
// together with its schema_migrations row.
func migrate(ctx context.Context, pool *pgxpool.Pool) (from, to int, err error) {
	ms, err := migrations()
	if err != nil {
		return 0, 0, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext('talaria-migrate:' || current_schema()))`); err != nil {
		return 0, 0, err
	}
	defer func() {
		// Unlock even when ctx ended; a dead connection drops the lock anyway.
		_, uerr := conn.Exec(context.WithoutCancel(ctx),
			`SELECT pg_advisory_unlock(hashtext('talaria-migrate:' || current_schema()))`)
		if uerr != nil {
			conn.Conn().Close(context.Background()) // do not return a connection still holding it
		}
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return 0, 0, err
	}
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&from); err != nil {
		return 0, 0, err
	}
	if from > len(ms) {
		return from, from, sqlrows.SchemaTooNew(from, len(ms), "another database")
	}
	for _, m := range ms[from:] {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name)
			return err
		})
		if err != nil {
			return from, m.version - 1, fmt.Errorf("migration %s: %w", m.name, err)
		}
	}
	return from, len(ms), nil
}
