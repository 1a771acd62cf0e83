package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/talaria-agent/talaria/store/storecopy"
	"github.com/talaria-agent/talaria/store/storeopen"
)

const dbMigrateAbout = `Copies every session (with its lineage link), every message (exact bytes
and seqs), every turn's event log (what trace shows), the memory of every
workspace and user, every cooldown and every serve API token (hashes only)
from a SQLite file into PostgreSQL, then verifies the counts and a checksum
of the message bytes read back from the target. Queued turns and turn
leases belong to running processes and are not copied. It refuses a target that holds
sessions the source does not have unless --append is given. Rerunning it is
safe: sessions already copied are compared, not written again. Stop talaria
on the source while it runs.

Exit codes: 0 copied and verified, 1 a database failure or a failed
verification, 2 bad flags or a refused (non-empty) target.`

var dbHelp = cmdHelp{
	name:  "db",
	usage: "migrate ...",
	about: `Commands:
  talaria db migrate --from sqlite://PATH --to postgres://USER@HOST/DB [--append] [--json]
      copy a SQLite database into PostgreSQL and verify it

'talaria db migrate --help' shows its flags and examples.`,
	examples: []string{"talaria db migrate --from sqlite://$HOME/.talaria/state.db --to postgres://talaria@db.internal/talaria"},
}

var dbMigrateHelp = cmdHelp{
	name:  "db migrate",
	usage: "--from sqlite://PATH --to postgres://USER@HOST/DB [--append] [--json]",
	about: dbMigrateAbout,
	examples: []string{
		"talaria db migrate --from sqlite://$HOME/.talaria/state.db --to postgres://talaria@db.internal/talaria",
		"talaria db migrate --from sqlite://old.db --to postgres://talaria@db.internal/talaria --append --json",
	},
}

func (c *cli) dbCmd(ctx context.Context, args []string) int {
	if code, done := c.subcommandHead(args, dbHelp, "migrate"); done {
		return code
	}
	if args[0] != "migrate" {
		return c.usageError(dbHelp, "unknown db command %q; use migrate", args[0])
	}
	h := dbMigrateHelp
	fs := h.flags()
	from := fs.String("from", "", "source database: sqlite://PATH")
	to := fs.String("to", "", "target database: postgres://USER@HOST/DB")
	appendTo := fs.Bool("append", false, "copy into a target that already holds other sessions")
	jsonOut := fs.Bool("json", false, "print the report as JSON")
	if code, done := c.parseFlags(fs, h, args[1:]); done {
		return code
	}
	if fs.NArg() > 0 {
		return c.usageError(h, "takes no arguments (got %q)", fs.Arg(0))
	}
	if *from == "" || *to == "" {
		return c.usageError(h, "needs --from sqlite://PATH and --to postgres://…")
	}
	if !strings.HasPrefix(*from, "sqlite://") {
		return c.usageError(h, "--from must be sqlite://PATH (got %s)", storeopen.Describe(storeopen.Options{URL: *from}))
	}
	if b, _, err := storeopen.Target(storeopen.Options{URL: *to}); err != nil || b != storeopen.Postgres {
		return c.usageError(h, "--to must be a postgres:// URL")
	}

	srcStore, err := storeopen.Open(ctx, storeopen.Options{URL: *from, MustExist: true, ReadOnly: true})
	if err != nil {
		return c.fail(exitOther, "source: %v", &dbError{err})
	}
	defer srcStore.Close()
	dstStore, err := storeopen.Open(ctx, storeopen.Options{URL: *to})
	if err != nil {
		return c.fail(exitOther, "target: %v", &dbError{err})
	}
	defer dstStore.Close()
	src, ok1 := srcStore.(storecopy.Source)
	dst, ok2 := dstStore.(storecopy.Target)
	if !ok1 || !ok2 {
		return c.fail(exitUsage, "db migrate copies from SQLite to PostgreSQL only")
	}

	opt := storecopy.Options{Append: *appendTo}
	if !*jsonOut {
		opt.Progress = func(done, total int) {
			if done == total || done%100 == 0 {
				fmt.Fprintf(c.stderr, "copied %d/%d sessions\n", done, total)
			}
		}
	}
	rep, err := storecopy.Copy(ctx, src, dst, opt)
	var notEmpty *storecopy.NotEmptyError
	if errors.As(err, &notEmpty) {
		return c.fail(exitUsage, "%v", err)
	}
	if err != nil {
		return c.fail(exitOther, "%v", err)
	}
	if *jsonOut {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
		return exitOK
	}
	fmt.Fprintf(c.stdout, "copied %d sessions (%d already there), %d messages, %d lineage links, %d turn events, %d memory entries, %d cooldowns, %d API tokens\n",
		rep.Copied, rep.Skipped, rep.Messages, rep.Lineage, rep.TurnEvents, rep.Memories, rep.Cooldowns, rep.Tokens)
	fmt.Fprintf(c.stdout, "verified: %d sessions, %d turn events and %d memory entries are in the target, and a sha256 of the message bytes matches: %s\n",
		rep.Sessions, rep.TurnEvents, rep.Memories, rep.Checksum)
	return exitOK
}
