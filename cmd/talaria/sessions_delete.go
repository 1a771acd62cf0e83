package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/store"
)

// deleteWait bounds how long delete --force waits for an interrupted turn
// to finalize and release the session.
const deleteWait = 20 * time.Second

// deleteSession deletes a session that no turn is running in. It takes the
// session's lease first, so it never deletes under a running turn: that is
// refused with exit 8, unless force, which interrupts the turn (as Ctrl+C
// would), waits for it to finalize, then deletes.
func (c *cli) deleteSession(ctx context.Context, st store.Store, id string, force bool) int {
	if _, err := st.GetSession(ctx, id); err != nil {
		return c.lookupExit(id, err)
	}
	holder := agent.HolderName()
	_, err := st.AcquireLease(ctx, id, holder, time.Minute)
	var held *store.LeaseHeldError
	if errors.As(err, &held) {
		if !force {
			return c.fail(exitBusy, "session %s was not deleted: a turn is running in it (%s); wait for it to end, or use --force to interrupt it first", id, held.Holder)
		}
		if ierr := agent.InterruptHolder(held.Holder); ierr != nil {
			return c.fail(exitBusy, "session %s was not deleted: its running turn cannot be interrupted from here (%v)", id, ierr)
		}
		fmt.Fprintf(c.stderr, "· interrupted the running turn of %s; waiting for it to finish\n", id)
		deadline := time.Now().Add(deleteWait)
		for errors.As(err, &held) && time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				return c.fail(exitInterrupted, "interrupted")
			case <-time.After(100 * time.Millisecond):
			}
			_, err = st.AcquireLease(ctx, id, holder, time.Minute)
		}
	}
	if isBusy(err) {
		return c.fail(exitBusy, "%s", busyLine(id, err))
	}
	if err != nil {
		return c.fail(exitOther, "%s", store.Describe(err))
	}
	// The lease row goes with the session.
	if err := st.DeleteSession(ctx, id); err != nil {
		return c.lookupExit(id, err)
	}
	fmt.Fprintf(c.stdout, "deleted session %s\n", id)
	return exitOK
}

// isBusy reports a session held by another turn.
func isBusy(err error) bool {
	var held *store.LeaseHeldError
	return errors.As(err, &held)
}

func busyLine(id string, err error) string {
	var held *store.LeaseHeldError
	if errors.As(err, &held) {
		return fmt.Sprintf("session %s is busy: a turn is running in it (%s); try again when it ends", id, held.Holder)
	}
	return err.Error()
}
