package turn

import (
	"fmt"
	"strings"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/llm"
)

// isConnectFailure reports whether err means nothing could be reached at
// all: the connection was refused, or the host does not resolve or route.
func isConnectFailure(err error) bool {
	return failover.InputFromError(err).Transport == llm.TransportConnect
}

// describeConnect words a connect failure as what it is. The timeout class
// it falls in says "timed out or dropped ... retrying usually works",
// which sends a person to wait when the fix is a setting.
func describeConnect(r *Route, c *failover.Classified, err error) {
	where := r.BaseURL
	if where == "" {
		where = "its endpoint"
	}
	name := r.Provider.Name()
	c.Summary = fmt.Sprintf("could not connect to %s (%s)", name, connectCause(err))
	c.Advice = fmt.Sprintf("Could not connect to %s at %s (%s). Check that the server is running and that the base URL is right.",
		name, where, connectCause(err))
}

// connectCause is the short reason a connection failed.
func connectCause(err error) string {
	low := strings.ToLower(err.Error())
	for _, w := range []string{"connection refused", "no such host", "network is unreachable", "no route to host"} {
		if strings.Contains(low, w) {
			return w
		}
	}
	return "no connection"
}
