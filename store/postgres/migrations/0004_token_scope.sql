-- 4: token scopes and configuration-managed tokens (issue 23).
ALTER TABLE tokens ADD COLUMN scope text NOT NULL DEFAULT '';
ALTER TABLE tokens ADD COLUMN managed boolean NOT NULL DEFAULT false;
CREATE INDEX tokens_name ON tokens (name) WHERE revoked_at IS NULL;

-- One row CheckWrite rewrites: readiness includes "a write commits".
CREATE TABLE health (
	id integer PRIMARY KEY,
	at bigint NOT NULL
);
