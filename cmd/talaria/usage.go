package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/talaria-agent/talaria/agent"

	"github.com/talaria-agent/talaria/store"
)

// usageText describes a session's token use and cost.
func usageText(s *store.Session, a *app) string {
	var b strings.Builder
	u := s.Usage
	fmt.Fprintf(&b, "session %s: %d API calls, %d messages\n", s.ID, s.APICalls, s.MessageCount)
	fmt.Fprintf(&b, "tokens: %d input (%d cache read, %d cache write), %d output",
		u.PromptTokens(), u.CacheReadTokens, u.CacheWriteTokens, u.OutputTokens)
	if s.CostUSD > 0 {
		fmt.Fprintf(&b, "\ncost: $%.4f", s.CostUSD)
	}
	if a != nil && a.store != nil {
		if sp, err := agent.SpendOf(context.Background(), a.store, s.ID); err == nil {
			b.WriteString(spendLines(sp))
		}
	}
	if a != nil && len(a.routes) > 0 {
		info := a.agent.ModelInfo()
		if info.Known {
			fmt.Fprintf(&b, "\nmodel %s: %d-token window, compression at ~%d tokens", info.Model, info.Window, a.agent.Threshold())
		} else {
			fmt.Fprintf(&b, "\nmodel %s is not in the catalogue: assuming a %d-token window (set models.%s in the config)", a.routes[0].Model, info.Window, a.routes[0].Model)
		}
	}
	return b.String()
}

// spendLines adds what subagents and background reviews of a session
// cost, apart from its own figures (which are what its context saw).
func spendLines(sp agent.SessionSpend) string {
	var b strings.Builder
	if x := sp.Subagents; x.Sessions > 0 {
		t := sp.Own
		t.Usage.Add(x.Usage)
		fmt.Fprintf(&b, "\nincl. subagents (%d sessions): %d API calls, %d input / %d output tokens",
			x.Sessions, sp.Own.APICalls+x.APICalls, t.Usage.PromptTokens(), t.Usage.OutputTokens)
		dollars(&b, sp.Own.CostUSD+x.CostUSD)
	}
	if x := sp.Review; x.Sessions > 0 {
		fmt.Fprintf(&b, "\nreview (%d runs, not in the context): %d API calls, %d input / %d output tokens",
			x.Sessions, x.APICalls, x.Usage.PromptTokens(), x.Usage.OutputTokens)
		dollars(&b, x.CostUSD)
	}
	return b.String()
}

func dollars(b *strings.Builder, usd float64) {
	if usd > 0 {
		fmt.Fprintf(b, ", $%.4f", usd)
	}
}
