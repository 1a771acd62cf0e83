package config

import (
	"fmt"
	"time"
)

// Timeouts bounds the silent waits of a model call, so a server that
// accepts and never answers, or a stream that stalls, ends in a timeout
// (retried, then fallen back from) instead of hanging the turn. Zero means
// the default; the defaults are generous for slow local models.
type Timeouts struct {
	// ResponseHeader is the wait for the response headers (default 120s).
	ResponseHeader Duration `yaml:"response_header"`
	// StreamIdle is the longest silence inside a streamed answer
	// (default 90s); a stream that keeps sending is never cut.
	StreamIdle Duration `yaml:"stream_idle"`
}

func (t Timeouts) validate() error {
	for _, d := range []struct {
		name string
		v    Duration
	}{{"timeouts.response_header", t.ResponseHeader}, {"timeouts.stream_idle", t.StreamIdle}} {
		if time.Duration(d.v) < 0 {
			return fmt.Errorf("%s is %s; it cannot be negative (0 means the default)", d.name, time.Duration(d.v))
		}
	}
	return nil
}
