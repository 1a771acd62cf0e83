package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/turn"
)

// failureLine is the one line a failed turn prints on stderr. It is the
// turn's explanation, except where the terminal can say something more
// useful than the engine: a server that could not be reached at all is a
// setting to check, not a network blip to wait out.
func (c *cli) failureLine(a *app, res *turn.Result) string {
	if line, ok := c.unreachableLine(a, res.Failure); ok {
		return line
	}
	return res.Explanation
}

// unreachableLine words a refused connection or an unknown host: which
// provider, at which URL, and where that URL is set.
func (c *cli) unreachableLine(a *app, f *turn.Failure) (string, bool) {
	if f == nil || f.Status != 0 || llm.ClassifyTransport(errors.New(f.Detail)) != llm.TransportConnect {
		return "", false
	}
	var base string
	for _, r := range a.routes {
		if r.Provider.Name() == f.Provider {
			base = r.BaseURL
			break
		}
	}
	if base == "" {
		base = "its base URL"
	}
	where := "--base-url"
	if _, inFile := a.cfg.Providers[f.Provider]; inFile && a.cfg.File != "" {
		where += fmt.Sprintf(", or providers.%s.base_url in %s", f.Provider, a.cfg.File)
	}
	return fmt.Sprintf("could not connect to %s at %s (%s): is the server running, and is the URL right? Check %s",
		f.Provider, base, connectCause(f.Detail), where), true
}

// connectCause is the short reason a connection failed.
func connectCause(detail string) string {
	low := strings.ToLower(detail)
	for _, w := range []string{"connection refused", "no such host", "network is unreachable", "no route to host"} {
		if strings.Contains(low, w) {
			return w
		}
	}
	return oneLine(detail)
}
