-- 6: what a session's system prompt was built from, and the session's own
-- addition to it, so the prompt is rebuilt once when its capabilities
-- change (issue 29).
ALTER TABLE sessions ADD COLUMN prompt_stamp text NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN prompt_extra bytea NOT NULL DEFAULT '\x';
