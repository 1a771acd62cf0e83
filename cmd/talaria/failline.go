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
	return res.Explanation + benchHint(res.Failure) + cliHint(a, res)
}

// cliHint adds the command, flag or config key that helps with an ending:
// the library says what went wrong in terms any front end can use; only
// this CLI knows its commands and its config file. It reads the typed
// outcome and class, never the text.
func cliHint(a *app, res *turn.Result) string {
	switch res.Exit {
	case turn.ExitCompressionFailed:
		return " With compression.on_failure: placeholder in the config, a failed summary is replaced by a note instead."
	case turn.ExitCompressionExhausted:
		return " In talaria chat, /compact compresses the conversation now."
	case turn.ExitSessionFailed:
		return " `talaria sessions list` shows your sessions."
	case turn.ExitCredentialsFailed:
		return " `talaria keys status` shows the keys and their cooldowns."
	case turn.ExitFailed:
		if res.Failure == nil {
			return ""
		}
		switch res.Failure.Class {
		case failover.ClassEndpointNotFound:
			return " The base URL is set with " + baseURLSetting(a, res.Failure.Provider) + "."
		case failover.ClassUnknown:
			return " `talaria explain-error` explains the logged error."
		}
	}
	return ""
}

// baseURLSetting says where a provider's base URL is set: the flag, and
// its entry in the config file when it has one.
func baseURLSetting(a *app, provider string) string {
	where := "--base-url"
	if a == nil || a.cfg == nil {
		return where
	}
	if _, inFile := a.cfg.Providers[provider]; inFile && a.cfg.File != "" {
		where += fmt.Sprintf(", or providers.%s.base_url in %s", provider, a.cfg.File)
	}
	return where
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
	return failover.Unreachable(f.Provider, f.BaseURL, f.Connect, baseURLSetting(a, f.Provider)), true
}
