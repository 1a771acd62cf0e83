package main

import (
	"context"
	"fmt"
	root "github.com/talaria-agent/talaria/app"
	"io"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/transcript"
)

// noteUnknownModels says once, at the start of a command, which of the
// configured models the catalogue does not know and what is assumed for
// them: a conservative window (compression starts early, never late) and
// an unknown price (no cost is shown).
func noteUnknownModels(w io.Writer, a *app) {
	seen := map[string]bool{}
	cat := a.agent.Catalogue()
	for _, r := range a.routes {
		if seen[r.Model] {
			continue
		}
		seen[r.Model] = true
		if info := cat.Lookup(r.Model); !info.Known {
			fmt.Fprintf(w, "talaria: model %q is not in the catalogue: assuming a %d-token context window and %d output tokens, price unknown (set models.%s in %s to declare them)\n",
				r.Model, info.Window, info.MaxOutput, r.Model, root.ConfigPath(a.cfg))
		}
	}
}

// followTip returns the live tip of sid's lineage: after a turn or
// /compact rotated the session, the chat goes on in the continuation and
// says so once.
func (c *cli) followTip(ctx context.Context, a *app, sid string) string {
	tip, err := store.ResolveTip(ctx, a.store, sid)
	if err != nil || tip.ID == sid {
		return sid
	}
	fmt.Fprintf(c.stderr, "· session %s was compressed into a new session; continuing in %s\n", sid, tip.ID)
	return tip.ID
}

// compactLine describes what /compact and `sessions compact` did.
func compactLine(res agent.CompactResult) string {
	s := fmt.Sprintf("~%d → ~%d tokens (%d messages summarized, %d tool outputs pruned)",
		res.Before, res.After, res.Summarized, res.Pruned)
	if res.SummaryFailed {
		s += "; the summary failed, a placeholder stands in for the removed messages"
	}
	if res.Rotated {
		s += "; the session continues as " + res.SessionID
	}
	return s
}

// contextLine says how full the session's context is now: the estimated
// size of its next request against the primary model's window.
func contextLine(ctx context.Context, a *app, s *store.Session) string {
	rows, err := a.store.Messages(ctx, s.ID, store.MessageQuery{})
	if err != nil {
		return "context: unknown (" + err.Error() + ")"
	}
	msgs, _ := transcript.Project(rows)
	n := compact.EstimateRequest(&llm.Request{System: s.SystemPrompt, Messages: msgs, Tools: a.agent.Tools().Specs()})
	w := a.agent.ModelInfo().Window
	return fmt.Sprintf("context: ~%d tokens in %d live messages (%d%% of the %d-token window)", n, len(msgs), n*100/max(w, 1), w)
}
