package transcriptgen

import (
	"context"
	"fmt"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// callSpend is one model call's cost, as a turn records it.
var callSpend = store.Spend{Usage: llm.Usage{InputTokens: 1200, OutputTokens: 80, Reported: true}, CostUSD: 0.0031, APICalls: 1}

// WriteTurn makes, on session sessionID, the writes of one turn of rounds
// tool rounds in the engine's order — the user's message, then per round
// the call and its result, then the answer, each call's cost recorded —
// and returns how many writes (transactions) that took. Folded, it writes
// as the engine does since issue 18: the lease with the user's message
// (AcquireLeaseAppend), each call's cost with its row (AppendSpend), so
// 2·rounds+3 writes. Otherwise every step is a write of its own, as before
// (AcquireLease, Append, AddUsage, ReleaseLease): 3·rounds+5.
func WriteTurn(ctx context.Context, s store.Store, sessionID string, rounds int, folded bool) (int, error) {
	const holder = "bench:1:x"
	writes := 0
	step := func(err error) error {
		writes++
		return err
	}
	user := Row(0)
	var l store.Lease
	var err error
	writes++
	if folded {
		l, err = s.AcquireLeaseAppend(ctx, sessionID, holder, time.Minute, user)
	} else if l, err = s.AcquireLease(ctx, sessionID, holder, time.Minute); err == nil {
		err = step(s.Append(ctx, l.Fence(), user))
	}
	if err != nil {
		return writes, fmt.Errorf("take the lease with the user's message: %w", err)
	}
	answer := func(m *store.Message) error {
		if folded {
			return step(s.AppendSpend(ctx, l.Fence(), callSpend, m))
		}
		if err := step(s.AddUsage(ctx, sessionID, callSpend.Usage, callSpend.CostUSD, callSpend.APICalls)); err != nil {
			return err
		}
		return step(s.Append(ctx, l.Fence(), m))
	}
	for r := range rounds {
		if err := answer(Row(4*r + 1)); err != nil {
			return writes, fmt.Errorf("round %d: the call: %w", r, err)
		}
		if err := step(s.Append(ctx, l.Fence(), Row(4*r+2))); err != nil {
			return writes, fmt.Errorf("round %d: the result: %w", r, err)
		}
	}
	if err := answer(Row(3)); err != nil {
		return writes, fmt.Errorf("the answer: %w", err)
	}
	return writes, step(s.ReleaseLease(ctx, l))
}
