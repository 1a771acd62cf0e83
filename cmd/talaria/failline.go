package main

import (
	"fmt"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/turn"
)

// failureLine is the one line a failed turn prints on stderr. It is the
// turn's explanation, except where the terminal can say something more
// useful than the engine: a server that could not be reached at all is a
// setting to check, and this CLI knows where that setting is.
func (c *cli) failureLine(a *app, res *turn.Result) string {
	if line, ok := c.unreachableLine(a, res.Failure); ok {
		return line
	}
	return res.Explanation + benchHint(res.Failure)
}

// benchHint names the way out of a key bench: the engine says how long it
// lasts; this CLI knows the command that lifts it early.
func benchHint(f *turn.Failure) string {
	if f == nil || f.Bench == nil || f.Provider == "" {
		return ""
	}
	reset := "talaria keys reset " + f.Provider
	switch {
	case f.BillingUnverified:
		return fmt.Sprintf(" If the usage page shows quota left, `%s` lifts the short bench now.", reset)
	case f.Class == failover.ClassBilling:
		return fmt.Sprintf(" After adding credit, run `%s` to use the key again at once.", reset)
	case f.Class == failover.ClassAuth || f.Class == failover.ClassAuthPermanent:
		return fmt.Sprintf(" After fixing the key, run `%s` to use it again at once.", reset)
	}
	return ""
}

// unreachableLine words a refused connection or an unknown host: which
// provider, at which URL, and where that URL is set. It reads the
// failure's typed transport, not its text.
func (c *cli) unreachableLine(a *app, f *turn.Failure) (string, bool) {
	if f == nil || f.Transport != llm.TransportConnect {
		return "", false
	}
	var base string
	for _, r := range a.routes {
		if r.Provider.Name() == f.Provider {
			base = r.BaseURL
			break
		}
	}
	where := "--base-url"
	if _, inFile := a.cfg.Providers[f.Provider]; inFile && a.cfg.File != "" {
		where += fmt.Sprintf(", or providers.%s.base_url in %s", f.Provider, a.cfg.File)
	}
	return failover.Unreachable(f.Provider, base, f.Connect, where), true
}
