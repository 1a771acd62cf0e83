package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// writeV5 builds a database as schema version 5 wrote it (AUTOINCREMENT
// ids, last_seq bumped by every append, rows indexed in batches): two
// sessions of rows, the newest row of the store and of session "a"
// deleted (so sqlite_sequence and last_seq are above what is left), and a
// lease on "a". It returns the ids that remain.
func writeV5(t *testing.T, path string) (ids []int64, lastID int64) {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path, "_pragma", "journal_mode(WAL)", "_pragma", "foreign_keys(1)"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	for _, m := range migrations[:5] {
		exec(m)
	}
	exec(`PRAGMA user_version = 5`)
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano()
	for _, id := range []string{"a", "b"} {
		exec(`INSERT INTO sessions (id, started_at, updated_at, last_seq) VALUES (?, ?, ?, 0)`, id, base, base)
	}
	for i := range 150 {
		sess := []string{"a", "b"}[i%2]
		exec(`UPDATE sessions SET last_seq = last_seq + 1, updated_at = ? WHERE id = ?`, base+int64(i), sess)
		exec(`INSERT INTO messages (session_id, seq, role, text, created_at)
			VALUES (?, (SELECT last_seq FROM sessions WHERE id = ?), 'user', ?, ?)`,
			sess, sess, fmt.Sprintf("medlar row %d", i), base+int64(i)*int64(time.Second))
	}
	// Index the first 128 rows, as batches did; the rest is backlog.
	exec(`INSERT INTO messages_fts(rowid, text) SELECT id, text FROM messages WHERE id <= 128`)
	exec(`UPDATE fts_state SET indexed_upto = 128`)
	exec(`DELETE FROM messages WHERE id IN (149, 150)`) // a's newest, then b's (the store's newest)
	exec(`INSERT INTO leases (session_id, holder, token, acquired_at, expires_at) VALUES ('a', 'h', 7, ?, ?)`,
		base, time.Now().Add(time.Hour).UnixNano())
	for i := int64(1); i <= 148; i++ {
		ids = append(ids, i)
	}
	return ids, 150
}

// TestMigrateV5 opens a version 5 database with this build: every row is
// kept with its id, seq and text, ids and seqs continue above everything
// ever handed out, and search, delete and the index work on old and new
// rows alike.
func TestMigrateV5(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	oldIDs, lastID := writeV5(t, path)
	s, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatalf("Open v5: %v", err)
	}
	defer s.Close()
	ctx := t.Context()

	var version int
	if err := s.r.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil || version != SchemaVersion {
		t.Fatalf("user_version = %d (%v), want %d", version, err, SchemaVersion)
	}
	var ids []int64
	for _, id := range []string{"a", "b"} {
		rows, err := s.Messages(ctx, id, store.MessageQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 74 {
			t.Fatalf("session %s has %d rows after migrating, want 74", id, len(rows))
		}
		for k, m := range rows {
			ids = append(ids, m.ID)
			if want := fmt.Sprintf("medlar row %d", m.ID-1); m.Text() != want || m.Seq != int64(k+1) {
				t.Fatalf("row %d: seq %d text %q, want seq %d text %q", m.ID, m.Seq, m.Text(), k+1, want)
			}
		}
	}
	slices.Sort(ids)
	if !slices.Equal(ids, oldIDs) {
		t.Fatalf("ids after migrating = %v, want %v", ids, oldIDs)
	}

	// The lease still fences; a new row takes a fresh id and the next seq.
	l := store.Lease{SessionID: "a", Holder: "h", Token: 7}
	m := &store.Message{Message: llm.NewText(llm.RoleUser, "medlar new")}
	if err := s.Append(ctx, l.Fence(), m); err != nil {
		t.Fatal(err)
	}
	if m.ID <= lastID || m.Seq != 76 {
		t.Fatalf("new row: id %d seq %d, want id > %d and seq 76 (75 was deleted)", m.ID, m.Seq, lastID)
	}
	if err := s.Append(ctx, store.Fence{SessionID: "a", Token: 6}, m); store.KindOf(err) != store.KindLeaseLost {
		t.Fatalf("append with an old token after migrating: %v", err)
	}

	hits, err := s.Search(ctx, "medlar", store.SearchOptions{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 149 || hits[0].MessageID != m.ID || hits[1].MessageID != 148 || hits[148].MessageID != 1 {
		t.Fatalf("search after migrating: %d hits, first %+v", len(hits), hits[0])
	}
	if err := s.Delete(ctx, l.Fence(), 3); err != nil { // an old, indexed row
		t.Fatal(err)
	}
	onWriter(t, s, func(ctx context.Context, tx *wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)`)
		return err
	})
	if hits, err := s.Search(ctx, "medlar", store.SearchOptions{Limit: 200}); err != nil || len(hits) != 148 {
		t.Fatalf("search after deleting an old row: %d hits, %v", len(hits), err)
	}
}
