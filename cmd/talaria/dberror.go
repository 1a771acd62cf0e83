package main

import (
	"errors"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// dbError is a failure of the database put the way a person at a terminal
// can act on: one line that names the file and says what to do.
type dbError struct{ err error }

func (e *dbError) Error() string { return store.Describe(e.err) }
func (e *dbError) Unwrap() error { return e.err }

// pickExit reports a failure to choose or create the session: a store
// failure exits as a turn's persistence failure would, with store.Describe's
// line; anything else is a usage mistake.
func (c *cli) pickExit(err error) int {
	var se *store.Error
	if errors.As(err, &se) && se.Kind != store.KindNotFound {
		return c.fail(exitCode(&turn.Result{Exit: turn.ExitPersistenceFailed}), "%s", store.Describe(err))
	}
	return c.fail(exitUsage, "%v", err)
}
