-- 5: each principal's priced spend per UTC day (issue 23): the daily
-- spending limit survives a restart and is shared by every node.
CREATE TABLE principal_spend (
	principal text NOT NULL,
	day       text NOT NULL,
	usd       double precision NOT NULL,
	PRIMARY KEY (principal, day)
);
