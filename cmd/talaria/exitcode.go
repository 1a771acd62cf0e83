package main

import (
	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/turn"
)

// familyExit is the exit code of each failure family (failover.ExitFamily).
var familyExit = map[string]int{
	"auth":        exitAuth,
	"rate_limit":  exitRateLimit,
	"context":     exitContext,
	"bad_request": exitBadRequest,
	"limit":       exitLimit,
	"busy":        exitBusy,
	"interrupted": exitInterrupted,
	"other":       exitOther,
}

// exitCode maps a turn's ending to the CLI's exit codes: the ending where
// it decides alone, else the family of the failure's class. It is the one
// place a class becomes an exit code.
func exitCode(r *turn.Result) int {
	switch r.Exit {
	case turn.ExitCompleted:
		return exitOK
	case turn.ExitInterrupted:
		return exitInterrupted
	case turn.ExitBudgetExhausted, turn.ExitToolLoop, turn.ExitSpendLimit, turn.ExitHandoffLimit:
		return exitLimit
	case turn.ExitBusy:
		return exitBusy
	case turn.ExitCompressionFailed, turn.ExitCompressionExhausted:
		// Whatever the class behind it (an overflow, a long-context
		// refusal): the conversation does not fit.
		return exitContext
	case turn.ExitFailed:
		if r.Failure != nil {
			return classExit(r.Failure.Class)
		}
	}
	return exitOther
}

// classExit is the exit code of a failure class.
func classExit(c failover.Class) int {
	if code, ok := familyExit[failover.ExitFamily(c)]; ok {
		return code
	}
	return exitOther
}
