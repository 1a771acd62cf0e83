-- 7 (issue 31): the tool-call ledger (store.ToolLedger), so a turn
-- continued on
-- another node after its own died runs no finished call again.
CREATE TABLE tool_calls (
	session_id  text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	call_id     text NOT NULL,
	turn_id     text NOT NULL,
	tool        text NOT NULL,
	node        text NOT NULL DEFAULT '',
	fence       bigint NOT NULL DEFAULT 0,
	args_hash   text NOT NULL DEFAULT '',
	state       text NOT NULL,
	result_id   bigint NOT NULL DEFAULT 0,
	is_error    boolean NOT NULL DEFAULT false,
	path        text NOT NULL DEFAULT '',
	before_hash text NOT NULL DEFAULT '',
	after_hash  text NOT NULL DEFAULT '',
	started_at  bigint NOT NULL,
	finished_at bigint NOT NULL DEFAULT 0,
	ord         bigserial,
	PRIMARY KEY (session_id, call_id)
);
CREATE INDEX tool_calls_turn ON tool_calls (session_id, turn_id, ord);
