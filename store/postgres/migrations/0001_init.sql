-- 1: initial schema. Times are UTC unix nanoseconds (bigint, so they keep
-- the nanoseconds SQLite keeps); NULL/0 means unset. Message payloads are
-- bytea: they may hold any bytes (a NUL from a binary file, invalid UTF-8),
-- which PostgreSQL's text type refuses, and api_content must come back
-- byte for byte.
CREATE TABLE sessions (
	id                 text PRIMARY KEY,
	title              text NOT NULL DEFAULT '',
	provider           text NOT NULL DEFAULT '',
	model              text NOT NULL DEFAULT '',
	parent_session_id  text NOT NULL DEFAULT '',
	end_reason         text NOT NULL DEFAULT '',
	system_prompt      bytea NOT NULL DEFAULT '\x',
	cwd                text NOT NULL DEFAULT '',
	started_at         bigint NOT NULL,
	updated_at         bigint NOT NULL,
	ended_at           bigint,
	input_tokens       bigint NOT NULL DEFAULT 0,
	output_tokens      bigint NOT NULL DEFAULT 0,
	cache_read_tokens  bigint NOT NULL DEFAULT 0,
	cache_write_tokens bigint NOT NULL DEFAULT 0,
	reasoning_tokens   bigint NOT NULL DEFAULT 0,
	usage_reported     boolean NOT NULL DEFAULT false,
	cost_usd           double precision NOT NULL DEFAULT 0,
	api_calls          bigint NOT NULL DEFAULT 0,
	-- last_seq only grows, so a seq is never reused even after Delete.
	last_seq           bigint NOT NULL DEFAULT 0,
	-- the gateway principal that owns the session ('' for the CLI's)
	principal          text NOT NULL DEFAULT '',
	-- '' for a conversation, else subagent or review (store.Session.Kind)
	kind               text NOT NULL DEFAULT ''
);
CREATE INDEX sessions_principal ON sessions (principal) WHERE principal <> '';
-- No index on updated_at: every append bumps it, and an indexed column
-- would make each of those updates a non-HOT one; listing sorts instead.
CREATE INDEX sessions_parent ON sessions (parent_session_id, started_at) WHERE parent_session_id <> '';

CREATE TABLE messages (
	id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	session_id         text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	seq                bigint NOT NULL,
	turn_id            text NOT NULL DEFAULT '',
	role               text NOT NULL,
	content            bytea,           -- JSON []llm.Part; NULL when plain text (see store/sqlite codec)
	text               bytea NOT NULL DEFAULT '\x', -- plain text for search and display
	tool_calls         bytea,           -- JSON []llm.ToolCall; NULL when none
	tool_call_id       text NOT NULL DEFAULT '',
	tool_name          text NOT NULL DEFAULT '',
	is_error           boolean NOT NULL DEFAULT false,
	reasoning          bytea,           -- JSON llm.Reasoning; NULL when absent
	api_content        bytea NOT NULL DEFAULT '\x',
	display_kind       text NOT NULL DEFAULT '',
	synthetic          boolean NOT NULL DEFAULT false,
	archived           boolean NOT NULL DEFAULT false,
	finish_reason      text NOT NULL DEFAULT '',
	input_tokens       bigint NOT NULL DEFAULT 0,
	output_tokens      bigint NOT NULL DEFAULT 0,
	cache_read_tokens  bigint NOT NULL DEFAULT 0,
	cache_write_tokens bigint NOT NULL DEFAULT 0,
	reasoning_tokens   bigint NOT NULL DEFAULT 0,
	usage_reported     boolean NOT NULL DEFAULT false,
	provider           text NOT NULL DEFAULT '',
	model              text NOT NULL DEFAULT '',
	created_at         bigint NOT NULL,
	-- The search document, built by the store from text with the same
	-- tokenizer that builds queries (see search.go), so matching does not
	-- depend on the server's locale or text search configuration.
	search             tsvector NOT NULL DEFAULT ''::tsvector,
	UNIQUE (session_id, seq)
);
CREATE INDEX messages_search ON messages USING gin (search);

-- A lease row is kept after release so the next token is always larger.
-- Lease times come from the database clock, so nodes with skewed clocks
-- agree on expiry.
CREATE TABLE leases (
	session_id  text PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
	holder      text NOT NULL,
	token       bigint NOT NULL,
	acquired_at bigint NOT NULL,
	expires_at  bigint NOT NULL,
	released    boolean NOT NULL DEFAULT false
);

CREATE TABLE cooldowns (
	provider text NOT NULL,
	base_url text NOT NULL DEFAULT '',
	key_id   text NOT NULL,
	until    bigint NOT NULL,
	reason   text NOT NULL DEFAULT '',
	set_at   bigint NOT NULL,
	PRIMARY KEY (provider, base_url, key_id)
);

-- The gateway's bearer tokens (hashes only) and its durable per-session
-- message queue, shared by every node on the database.
CREATE TABLE tokens (
	id         text PRIMARY KEY,
	name       text NOT NULL,
	principal  text NOT NULL,
	hash       text NOT NULL UNIQUE,
	created_at bigint NOT NULL,
	revoked_at bigint
);

CREATE TABLE queue (
	id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	turn_id    text NOT NULL,
	text       bytea NOT NULL,
	created_at bigint NOT NULL,
	started_at bigint
);
CREATE INDEX queue_session ON queue (session_id, id);

-- Durable memory of a workspace (and optionally one user).
CREATE TABLE memory (
	id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	workspace      text NOT NULL,
	user_name      text NOT NULL DEFAULT '',
	text           bytea NOT NULL,
	source_session text NOT NULL DEFAULT '',
	created_at     bigint NOT NULL
);
CREATE INDEX memory_workspace ON memory (workspace, user_name, id);
