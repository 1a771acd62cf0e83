package main

import (
	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/turn"
)

// exitCode maps a turn's ending to the CLI's exit codes: the outcome where
// it decides alone, else the provider class behind a failed turn. It is
// the one place an ending becomes an exit code; the library knows no exit
// codes.
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
	// persistence_failed, panic, lease_lost, session_failed,
	// credentials_failed, configuration_failed, handoff and unknown
	// endings.
	return exitOther
}

// classExit is the exit code of a turn that a provider failure of class c
// ended.
func classExit(c failover.Class) int {
	switch c {
	case failover.ClassAuth, failover.ClassAuthPermanent, failover.ClassBilling:
		return exitAuth
	case failover.ClassRateLimit, failover.ClassUpstreamRateLimit, failover.ClassOverloaded:
		return exitRateLimit
	case failover.ClassContextOverflow, failover.ClassPayloadTooLarge, failover.ClassOutputCap,
		failover.ClassToolCallTruncated, failover.ClassReasoningExhausted:
		return exitContext
	case failover.ClassFormatError, failover.ClassContentPolicyBlocked, failover.ClassProviderPolicyBlocked,
		failover.ClassModelNotFound, failover.ClassEndpointNotFound, failover.ClassLongContextUnavailable:
		return exitBadRequest
	case failover.ClassCanceled:
		return exitInterrupted
	}
	if c.ShapeRepairable() {
		// The request's shape was refused and its one repair did not help.
		return exitBadRequest
	}
	return exitOther
}
