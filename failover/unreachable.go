package failover

import (
	"fmt"

	"github.com/talaria-agent/talaria/llm"
)

// A server that could not be reached at all (the connection refused, the
// host unknown or unroutable) falls in the timeout class, whose words say
// "retrying usually works": that sends a person to wait when the fix is a
// setting. These words say what it is.

// unreachable reports whether c is a connection that was never made.
func (c Classified) unreachable() bool {
	return c.Transport == llm.TransportConnect && c.Status == 0
}

func connectCause(k llm.ConnectCause) string {
	if k == llm.ConnectUnknown {
		return "no connection"
	}
	return string(k)
}

func unreachableSummary(c Classified) string {
	return "could not connect to " + who(c) + " (" + connectCause(c.Connect) + ")"
}

// Unreachable is the sentence for a provider's server that could not be
// reached at all: which provider, at which URL, why, and what to check.
// setting names where the URL is set ("" says the base URL).
func Unreachable(provider, baseURL string, cause llm.ConnectCause, setting string) string {
	if provider == "" {
		provider = "the provider"
	}
	if baseURL == "" {
		baseURL = "its endpoint"
	}
	if setting == "" {
		setting = "the base URL"
	}
	return fmt.Sprintf("Could not connect to %s at %s (%s): is the server running, and is the URL right? Check %s.",
		provider, baseURL, connectCause(cause), setting)
}
