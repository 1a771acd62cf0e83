package store

import (
	"errors"
	"path/filepath"
	"strings"
)

// Describe words a store failure by its real cause, on one line a person
// can act on: which database, what went wrong, what to do. A locked
// database is not a damaged one, and neither is a full disk. Errors that
// are not store failures keep their own text.
func Describe(err error) string {
	if err == nil {
		return ""
	}
	var se *Error
	if !errors.As(err, &se) {
		// A sentinel wrapped by a caller: its text says more than "not
		// found", but a lost lease or an ended session has its own words.
		if k := KindOf(err); k == KindLeaseLost || k == KindEnded {
			return describe(k, "", "")
		}
		return oneLine(err.Error())
	}
	switch se.Kind {
	case KindNotFound, KindClosed, KindOther:
		return oneLine(se.Error())
	}
	cause := ""
	if se.Err != nil {
		cause = oneLine(se.Err.Error())
	}
	if s := describe(se.Kind, se.Path, cause); s != "" {
		return s
	}
	return oneLine(se.Error())
}

// describe is the one wording of each kind. path names the database (a
// file, or a server for PostgreSQL; "" for none), cause is the underlying
// error's text ("" for none).
func describe(k ErrorKind, path, cause string) string {
	db := "the database"
	if path != "" {
		db += " " + path
	}
	why := ""
	if cause != "" {
		why = " (" + cause + ")"
	}
	switch k {
	case KindLocked:
		return db + " is locked by another process" + why +
			": another talaria or a program holding a write lock on it; wait for it to finish or stop it, then retry"
	case KindCorrupt:
		s := db + " is damaged or is not a Talaria database" + why + ": move it aside to start fresh"
		if path != "" {
			s += " (mv " + shellQuote(path) + " " + shellQuote(path+".damaged") + ")"
		}
		return s + ", its sessions stay in the moved file"
	case KindReadOnly:
		s := db + " is read-only" + why + ": check the permissions of the file"
		if path != "" {
			s += " and of " + filepath.Dir(path) + ", or point TALARIA_HOME elsewhere"
		}
		return s
	case KindDiskFull:
		return "the disk holding " + db + " is full, or a file-size limit was reached" + why + ": free some space and retry"
	case KindUnavailable:
		server := "the database server"
		if path != "" {
			server += " " + path
		}
		return server + " cannot be reached" + why + ": check that it is running and reachable, then retry"
	case KindLeaseLost:
		return "another process took over this session's turn"
	case KindEnded:
		return "the session was closed (it may have been continued in a new session after compression); continue in its newest session"
	case KindNotFound:
		return "not found"
	case KindClosed:
		return "the store is closed"
	}
	return ""
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

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
