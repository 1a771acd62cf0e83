package main

import (
	"fmt"
	"strings"

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
