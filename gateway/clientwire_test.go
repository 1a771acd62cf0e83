package gateway

import (
	"testing"

	"github.com/talaria-agent/talaria/gateway/client"
)

// The Go client (its own package, so that it links nothing of the server)
// reads the server's wire names: they must be the same strings.
func TestClientWireNamesMatchServer(t *testing.T) {
	for _, tc := range []struct{ client, server string }{
		{client.EventTextDelta, string(EventTextDelta)},
		{client.EventReasoningDelta, string(EventReasoningDelta)},
		{client.EventDiscard, string(EventDiscard)},
		{client.EventStatus, string(EventStatus)},
		{client.EventToolStarted, string(EventToolStarted)},
		{client.EventToolFinished, string(EventToolFinished)},
		{client.EventApprovalRequired, string(EventApprovalRequired)},
		{client.EventTurnFinished, string(EventTurnFinished)},
		{client.DecisionAllow, DecisionAllow},
		{client.DecisionDeny, DecisionDeny},
	} {
		if tc.client != tc.server {
			t.Errorf("client reads %q, server sends %q", tc.client, tc.server)
		}
	}
}
