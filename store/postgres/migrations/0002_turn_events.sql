-- Per-turn event logs (store.TurnEvent), for `talaria trace`.
CREATE TABLE turn_events (
	id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	session_id  text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	turn_id     text NOT NULL,
	seq         integer NOT NULL,
	kind        text NOT NULL,
	name        text NOT NULL DEFAULT '',
	started_at  bigint NOT NULL,
	duration_ns bigint NOT NULL DEFAULT 0,
	cost_usd    double precision NOT NULL DEFAULT 0,
	detail      text NOT NULL DEFAULT '',
	UNIQUE (session_id, turn_id, seq)
);
