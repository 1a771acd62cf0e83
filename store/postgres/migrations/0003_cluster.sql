-- 3: several gateway nodes on one database. stream_events keeps each
-- session's SSE events so a node can deliver the events of a turn running
-- on another node and resume a stream from any id; stream_heads hands out
-- the ids (its row lock orders the commits, so ids become visible in order).
CREATE TABLE stream_heads (
	session_id text PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
	last_id    bigint NOT NULL,
	prev_id    bigint NOT NULL DEFAULT 0 -- the id before last_id (0: none)
);

CREATE TABLE stream_events (
	session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	id         bigint NOT NULL,
	type       text NOT NULL,
	turn_id    text NOT NULL DEFAULT '',
	data       bytea NOT NULL,
	created_at bigint NOT NULL,
	PRIMARY KEY (session_id, id)
);
CREATE INDEX stream_events_created ON stream_events (created_at);
