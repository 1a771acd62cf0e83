package openai

import (
	"io"
	"time"
)

// After [DONE] only the end of the chunked body is left; drain reads at
// most drainLimit of it and waits at most drainWait.
const (
	drainLimit = 4 << 10
	drainWait  = 50 * time.Millisecond
)

// drain reads what is left of a finished stream so net/http can put the
// connection back in its pool: a body closed before EOF takes its
// connection with it, and the next call pays a new TCP (and TLS)
// handshake. A server that keeps the body open after [DONE] is cut off
// after drainWait; closing a client body unblocks a pending read.
func drain(body io.ReadCloser) {
	t := time.AfterFunc(drainWait, func() { _ = body.Close() })
	defer t.Stop()
	_, _ = io.Copy(io.Discard, io.LimitReader(body, drainLimit))
}
