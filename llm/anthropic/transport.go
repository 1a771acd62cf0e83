package anthropic

import (
	"context"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/internal/netclass"
)

// classifyTransport names the connection-level failure behind err. The
// caller's ctx wins: once it is done, the failure is its cancellation or
// deadline, whatever the transport reported.
func classifyTransport(ctx context.Context, err error) llm.TransportKind {
	switch ctx.Err() {
	case nil:
	case context.DeadlineExceeded:
		return llm.TransportTimeout
	default:
		return llm.TransportCanceled
	}
	return netclass.Classify(err)
}
