package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// usageColumns are a model call's token counts, kept alike on sessions
// (their totals) and messages (one reply's).
const usageColumns = `	input_tokens       INTEGER NOT NULL DEFAULT 0,
	output_tokens      INTEGER NOT NULL DEFAULT 0,
	cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
	cache_write_tokens INTEGER NOT NULL DEFAULT 0,
	reasoning_tokens   INTEGER NOT NULL DEFAULT 0,
	usage_reported     INTEGER NOT NULL DEFAULT 0,
`

// messagesColumns is the messages table after its id column, the same in
// migration 1 and in migration 6, which rebuilds the table.
const messagesColumns = `	session_id         TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	seq                INTEGER NOT NULL,
	turn_id            TEXT NOT NULL DEFAULT '',
	role               TEXT NOT NULL,
	content            TEXT,            -- JSON []llm.Part; NULL when there are no parts
	text               TEXT NOT NULL DEFAULT '', -- plain text for search and display
	tool_calls         TEXT,            -- JSON []llm.ToolCall; NULL when none
	tool_call_id       TEXT NOT NULL DEFAULT '',
	tool_name          TEXT NOT NULL DEFAULT '',
	is_error           INTEGER NOT NULL DEFAULT 0,
	reasoning          TEXT,            -- JSON llm.Reasoning; NULL when absent
	api_content        TEXT NOT NULL DEFAULT '',
	display_kind       TEXT NOT NULL DEFAULT '',
	synthetic          INTEGER NOT NULL DEFAULT 0,
	archived           INTEGER NOT NULL DEFAULT 0,
	finish_reason      TEXT NOT NULL DEFAULT '',
` + usageColumns + `	provider           TEXT NOT NULL DEFAULT '',
	model              TEXT NOT NULL DEFAULT '',
	created_at         INTEGER NOT NULL,
	UNIQUE(session_id, seq)
`

// ftsTriggers keep the full-text index in step with deleted and edited
// rows (migrations 1 and 6).
const ftsTriggers = `CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages
WHEN old.text <> '' AND old.id <= (SELECT indexed_upto FROM fts_state) BEGIN
	INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF text ON messages
WHEN old.id <= (SELECT indexed_upto FROM fts_state) BEGIN
	INSERT INTO messages_fts(messages_fts, rowid, text) SELECT 'delete', old.id, old.text WHERE old.text <> '';
	INSERT INTO messages_fts(rowid, text) SELECT new.id, new.text WHERE new.text <> '';
END;
`

// migrations are applied in order, forward only; PRAGMA user_version records
// how many ran. Never edit a released entry: append a new one.
var migrations = [...]string{
	// 1: initial schema. Times are UTC unix nanoseconds; 0/NULL means unset.
	`
CREATE TABLE sessions (
	id                 TEXT PRIMARY KEY,
	title              TEXT NOT NULL DEFAULT '',
	provider           TEXT NOT NULL DEFAULT '',
	model              TEXT NOT NULL DEFAULT '',
	parent_session_id  TEXT NOT NULL DEFAULT '',
	end_reason         TEXT NOT NULL DEFAULT '',
	system_prompt      TEXT NOT NULL DEFAULT '',
	cwd                TEXT NOT NULL DEFAULT '',
	started_at         INTEGER NOT NULL,
	updated_at         INTEGER NOT NULL,
	ended_at           INTEGER,
` + usageColumns + `	cost_usd           REAL NOT NULL DEFAULT 0,
	api_calls          INTEGER NOT NULL DEFAULT 0,
	-- last_seq only grows, so a seq is never reused even after Delete.
	last_seq           INTEGER NOT NULL DEFAULT 0
);
-- No index on updated_at: every append bumps it, and keeping an index in
-- step would add a page write to each append; listing sorts instead.
CREATE INDEX sessions_parent ON sessions(parent_session_id, started_at) WHERE parent_session_id <> '';

CREATE TABLE messages (
	id                 INTEGER PRIMARY KEY AUTOINCREMENT,
` + messagesColumns + `);

-- External-content FTS5 index over messages.text. Rows are indexed in
-- batches (see fts.go), not by an insert trigger: indexing one row per
-- transaction costs more than the rest of an append. fts_state records the
-- highest message id indexed; only rows up to it must leave the index when
-- deleted. Archiving only flips a flag, so it does not touch the index.
CREATE VIRTUAL TABLE messages_fts USING fts5(text, content='messages', content_rowid='id');
CREATE TABLE fts_state (
	id           INTEGER PRIMARY KEY CHECK (id = 1),
	indexed_upto INTEGER NOT NULL
);
INSERT INTO fts_state (id, indexed_upto) VALUES (1, 0);
` + ftsTriggers + `
-- A lease row is kept after release so the next token is always larger.
CREATE TABLE leases (
	session_id  TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
	holder      TEXT NOT NULL,
	token       INTEGER NOT NULL,
	acquired_at INTEGER NOT NULL,
	expires_at  INTEGER NOT NULL,
	released    INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE cooldowns (
	provider TEXT NOT NULL,
	key_id   TEXT NOT NULL,
	until    INTEGER NOT NULL,
	reason   TEXT NOT NULL DEFAULT '',
	set_at   INTEGER NOT NULL,
	PRIMARY KEY (provider, key_id)
);
`,
	// 2: the gateway: session owners, bearer tokens (hashed), the durable
	// per-session message queue.
	`
ALTER TABLE sessions ADD COLUMN principal TEXT NOT NULL DEFAULT '';
CREATE INDEX sessions_principal ON sessions(principal) WHERE principal <> '';

CREATE TABLE tokens (
	id         TEXT PRIMARY KEY,
	name       TEXT NOT NULL,
	principal  TEXT NOT NULL,
	hash       TEXT NOT NULL UNIQUE,
	created_at INTEGER NOT NULL,
	revoked_at INTEGER
);

CREATE TABLE queue (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	turn_id    TEXT NOT NULL,
	text       TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	started_at INTEGER
);
CREATE INDEX queue_session ON queue(session_id, id);
`,
	// 3: session kinds (subagent, review children) and workspace memory.
	`
ALTER TABLE sessions ADD COLUMN kind TEXT NOT NULL DEFAULT '';

CREATE TABLE memory (
	id             INTEGER PRIMARY KEY AUTOINCREMENT,
	workspace      TEXT NOT NULL,
	user_name      TEXT NOT NULL DEFAULT '',
	text           TEXT NOT NULL,
	source_session TEXT NOT NULL DEFAULT '',
	created_at     INTEGER NOT NULL
);
CREATE INDEX memory_workspace ON memory(workspace, user_name, id);
`,
	// 4: a cooldown belongs to an endpoint, not only to a provider name:
	// every --base-url server is provider "custom", and one server's 401
	// must not bench another's. Old rows keep base_url '' (they expire).
	`
CREATE TABLE cooldowns_v2 (
	provider TEXT NOT NULL,
	base_url TEXT NOT NULL DEFAULT '',
	key_id   TEXT NOT NULL,
	until    INTEGER NOT NULL,
	reason   TEXT NOT NULL DEFAULT '',
	set_at   INTEGER NOT NULL,
	PRIMARY KEY (provider, base_url, key_id)
);
INSERT INTO cooldowns_v2 (provider, base_url, key_id, until, reason, set_at)
	SELECT provider, '', key_id, until, reason, set_at FROM cooldowns;
DROP TABLE cooldowns;
ALTER TABLE cooldowns_v2 RENAME TO cooldowns;
`,
	// 5: per-turn event logs (store.TurnEvent), for `talaria trace`.
	`
CREATE TABLE turn_events (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	turn_id     TEXT NOT NULL,
	seq         INTEGER NOT NULL,
	kind        TEXT NOT NULL,
	name        TEXT NOT NULL DEFAULT '',
	started_at  INTEGER NOT NULL,
	duration_ns INTEGER NOT NULL DEFAULT 0,
	cost_usd    REAL NOT NULL DEFAULT 0,
	detail      TEXT NOT NULL DEFAULT '',
	UNIQUE(session_id, turn_id, seq)
);
`,
	// 6: a cheaper commit path and search (issue 18).
	//
	// messages loses AUTOINCREMENT, whose sqlite_sequence row was one more
	// page written by every append. Ids must still never be reused (the
	// full-text index and callers key on them), so fts_state.id_floor keeps
	// the highest id ever deleted, set by the delete trigger, and an insert
	// takes max(max(id), id_floor) + 1 (see insertSQL).
	//
	// An append no longer writes the session row: its seq is
	// max(sessions.last_seq, max(seq)) + 1, and last_seq becomes a floor that
	// only Delete raises; the session's UpdatedAt is read as the newer of
	// updated_at and its last row's created_at.
	//
	// search_marks(upto, newest): newest is the greatest created_at of any
	// row with id <= upto, one mark per indexing batch. Search walks matches
	// from the highest id down and stops once the mark below its position
	// proves no older id can be newer than what it holds (see search.go).
	`
CREATE TABLE messages_v6 (
	id                 INTEGER PRIMARY KEY,
` + messagesColumns + `);
-- Same columns in the same order: migration 1 made the table from
-- messagesColumns and no migration since has altered it.
INSERT INTO messages_v6 SELECT * FROM messages;

ALTER TABLE fts_state ADD COLUMN id_floor INTEGER NOT NULL DEFAULT 0;
UPDATE fts_state SET id_floor = coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0);

-- Dropping a table fires no trigger, so the index keeps its entries; the
-- new table has the same ids.
DROP TABLE messages;
ALTER TABLE messages_v6 RENAME TO messages;

` + ftsTriggers + `CREATE TRIGGER messages_id_floor AFTER DELETE ON messages
WHEN old.id > (SELECT id_floor FROM fts_state) BEGIN
	UPDATE fts_state SET id_floor = old.id;
END;

CREATE TABLE search_marks (
	upto   INTEGER PRIMARY KEY,
	newest INTEGER NOT NULL
);
INSERT INTO search_marks (upto, newest)
SELECT upto, max(newest) OVER (ORDER BY upto ROWS UNBOUNDED PRECEDING) FROM (
	SELECT max(id) AS upto, max(created_at) AS newest FROM messages
	WHERE id <= (SELECT indexed_upto FROM fts_state) GROUP BY id / 64);
-- The last mark sits at indexed_upto itself, even when its rows are gone.
INSERT OR IGNORE INTO search_marks (upto, newest)
SELECT f.indexed_upto, m.newest FROM fts_state f, (SELECT max(newest) AS newest FROM search_marks) m
WHERE m.newest IS NOT NULL;
`,
	// 7: token scopes and configuration-managed tokens (issue 23).
	`
ALTER TABLE tokens ADD COLUMN scope TEXT NOT NULL DEFAULT '';
ALTER TABLE tokens ADD COLUMN managed INTEGER NOT NULL DEFAULT 0;
CREATE INDEX tokens_name ON tokens(name) WHERE revoked_at IS NULL;

-- One row CheckWrite rewrites: readiness includes "a write commits".
CREATE TABLE health (
	id INTEGER PRIMARY KEY,
	at INTEGER NOT NULL
);
`,
	// 8: each principal's priced spend per UTC day (issue 23): the daily
	// spending limit survives a restart.
	`
CREATE TABLE principal_spend (
	principal TEXT NOT NULL,
	day       TEXT NOT NULL,
	usd       REAL NOT NULL,
	PRIMARY KEY (principal, day)
) WITHOUT ROWID;
`,
	// 9: what a session's system prompt was built from, and the session's
	// own addition to it, so the prompt is rebuilt once when its
	// capabilities change (issue 29).
	`
ALTER TABLE sessions ADD COLUMN prompt_stamp TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN prompt_extra TEXT NOT NULL DEFAULT '';
`,
	// 10 (issue 31): the tool-call ledger (store.ToolLedger), so a
	// turn continued after its process died runs no finished call again.
	`
CREATE TABLE tool_calls (
	session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	call_id     TEXT NOT NULL,
	turn_id     TEXT NOT NULL,
	tool        TEXT NOT NULL,
	node        TEXT NOT NULL DEFAULT '',
	fence       INTEGER NOT NULL DEFAULT 0,
	args_hash   TEXT NOT NULL DEFAULT '',
	state       TEXT NOT NULL,
	result_id   INTEGER NOT NULL DEFAULT 0,
	is_error    INTEGER NOT NULL DEFAULT 0,
	path        TEXT NOT NULL DEFAULT '',
	before_hash TEXT NOT NULL DEFAULT '',
	after_hash  TEXT NOT NULL DEFAULT '',
	started_at  INTEGER NOT NULL,
	finished_at INTEGER NOT NULL DEFAULT 0,
	ord         INTEGER NOT NULL,
	PRIMARY KEY (session_id, call_id)
) WITHOUT ROWID;
CREATE INDEX tool_calls_turn ON tool_calls(session_id, turn_id, ord);
`,
}

// SchemaVersion is the schema version this build writes.
const SchemaVersion = len(migrations)

// SchemaTooNewError says the database was written by a newer Talaria whose
// schema this build does not know; opening it could damage it.
type SchemaTooNewError = sqlrows.SchemaTooNewError

// schemaTooNew is the error for a file at schema version found.
func schemaTooNew(found int) error {
	return sqlrows.SchemaTooNew(found, SchemaVersion, "another database file")
}

// migrate brings the schema up to date in one IMMEDIATE transaction, so two
// processes opening a fresh file at once do not both run a migration.
func migrate(ctx context.Context, db *sql.DB) (from, to int, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err = tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&from); err != nil {
		return 0, 0, err
	}
	if from > len(migrations) {
		return from, from, schemaTooNew(from)
	}
	for v := from; v < len(migrations); v++ {
		if _, err = tx.ExecContext(ctx, migrations[v]); err != nil {
			return from, v, fmt.Errorf("migration %d: %w", v+1, err)
		}
	}
	if from != len(migrations) {
		// PRAGMA takes no bound parameters; the value is our own constant.
		if _, err = tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, len(migrations))); err != nil {
			return from, from, err
		}
	}
	if err = tx.Commit(); err != nil {
		return from, from, err
	}
	return from, len(migrations), nil
}
