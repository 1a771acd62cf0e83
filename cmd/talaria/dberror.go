package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/talaria-agent/talaria/store"
)

// dbError is a failure of the database put the way a person at a terminal
// can act on: one line that names the file and says what to do.
type dbError struct{ err error }

func (e *dbError) Error() string { return describeDB(e.err) }
func (e *dbError) Unwrap() error { return e.err }

// describeDB words a store failure by its real cause. A locked database is
// not a damaged one, and neither is a full disk: each says what helps.
func describeDB(err error) string {
	var se *store.Error
	if !errors.As(err, &se) || se.Path == "" {
		return oneLine(err.Error())
	}
	path := se.Path
	cause := "unknown cause"
	if se.Err != nil {
		cause = oneLine(se.Err.Error())
	}
	switch se.Kind {
	case store.KindLocked:
		return fmt.Sprintf("the database %s is locked by another process (%s): another talaria or a program holding a write lock on it; wait for it to finish or stop it, then retry",
			path, cause)
	case store.KindCorrupt:
		return fmt.Sprintf("the database %s is damaged or is not a Talaria database (%s): move it aside to start fresh (mv %s %s), its sessions stay in the moved file",
			path, cause, shellQuote(path), shellQuote(path+".damaged"))
	case store.KindReadOnly:
		return fmt.Sprintf("the database %s cannot be written (%s): check the permissions of the file and of %s, or point TALARIA_HOME elsewhere",
			path, cause, filepath.Dir(path))
	case store.KindDiskFull:
		return fmt.Sprintf("the disk holding the database %s is full, or a file-size limit was reached (%s): free some space and retry", path, cause)
	case store.KindUnavailable:
		return fmt.Sprintf("the database server %s cannot be reached (%s): check that it is running and reachable, then retry", path, cause)
	}
	return oneLine(se.Error())
}

// shellQuote quotes a path for a command the user may paste.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '+' || r == ',' || r == ':' || r == '@' ||
			r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// pickExit reports a failure to choose or create the session: a store
// failure is exit 1 with describeDB's line, anything else a usage mistake.
func (c *cli) pickExit(err error) int {
	var se *store.Error
	if errors.As(err, &se) && se.Kind != store.KindNotFound {
		return c.fail(exitOther, "%s", describeDB(err))
	}
	return c.fail(exitUsage, "%v", err)
}
