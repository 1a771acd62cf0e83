package llm

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Default silent-wait limits of a model call. They are generous because a
// slow local model may think for a minute before its first byte; they exist
// so that a server that accepts and never answers, or a stream that stalls,
// ends in a timeout the retry loop can act on instead of hanging the turn.
const (
	DefaultHeaderTimeout = 120 * time.Second
	DefaultIdleTimeout   = 90 * time.Second
)

// Timeouts bounds the two silent waits of a model call. Zero means the
// default; a negative value turns that limit off.
type Timeouts struct {
	// Header is the wait for the response headers once the request is sent.
	Header time.Duration
	// Idle is the longest wait for the next bytes of a response body
	// (between two streamed events); it never limits a stream that keeps
	// sending, however long it runs.
	Idle time.Duration
}

func (t Timeouts) header() time.Duration { return orDefault(t.Header, DefaultHeaderTimeout) }
func (t Timeouts) idle() time.Duration   { return orDefault(t.Idle, DefaultIdleTimeout) }

func orDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// defaultIdleConnsPerHost is how many idle connections a provider's client
// keeps per host. net/http's default of 2 makes a process running many
// turns at once against one endpoint open (and, against a real provider,
// TLS-handshake) a new connection for most calls; the pool is sized for a
// gateway's concurrency instead.
const defaultIdleConnsPerHost = 256

// NewHTTPClient returns the client the adapters use when none is given: a
// connection pool of its own sized for concurrency (one client per provider
// is meant to be shared by every route and turn that calls it), HTTP/2
// where the endpoint offers it, no overall timeout (streams are long), and
// the header and idle limits of t.
func NewHTTPClient(t Timeouts) *http.Client {
	return newHTTPClient(t, newTransport(t))
}

// newTransport is the tuned transport under NewHTTPClient. Only the dial,
// the TLS handshake and the wait for response headers are bounded; nothing
// bounds a response body in flight, so a long stream is never cut (the idle
// limit between its bytes is NewHTTPClient's job).
func newTransport(t Timeouts) *http.Transport {
	tr := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          4 * defaultIdleConnsPerHost,
		MaxIdleConnsPerHost:   defaultIdleConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: t.header(),
	}
	return tr
}

// NewHTTPClientWith wraps a caller's transport with the idle limit of t;
// benchmarks use it to compare pool settings.
func NewHTTPClientWith(t Timeouts, base http.RoundTripper) *http.Client {
	return newHTTPClient(t, base)
}

func newHTTPClient(t Timeouts, base http.RoundTripper) *http.Client {
	if t.idle() <= 0 {
		return &http.Client{Transport: base}
	}
	return &http.Client{Transport: &idleTransport{base: base, idle: t.idle()}}
}

// idleTransport puts an idle limit on every response body.
type idleTransport struct {
	base http.RoundTripper
	idle time.Duration
}

func (t *idleTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp == nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = newIdleBody(resp.Body, t.idle)
	return resp, nil
}

// idleTimeoutError is a response body that sent nothing for longer than the
// idle limit. It is a net.Error whose Timeout is true, so it classifies as
// TransportTimeout.
type idleTimeoutError struct{ Idle time.Duration }

func (e *idleTimeoutError) Error() string {
	return fmt.Sprintf("stream idle timeout: the server sent nothing for %s", e.Idle)
}

// Timeout reports true: an idle stream is a timeout.
func (e *idleTimeoutError) Timeout() bool { return true }

// Temporary reports true: another attempt may get a live stream.
func (e *idleTimeoutError) Temporary() bool { return true }

// idleBody closes the body when one Read waits longer than idle. Only time
// spent blocked in Read counts, so a slow consumer is never cut off.
type idleBody struct {
	rc    io.ReadCloser
	idle  time.Duration
	timer *time.Timer

	mu    sync.Mutex
	fired bool
}

func newIdleBody(rc io.ReadCloser, idle time.Duration) *idleBody {
	b := &idleBody{rc: rc, idle: idle}
	b.timer = time.AfterFunc(time.Hour, b.expire)
	b.timer.Stop()
	return b
}

func (b *idleBody) expire() {
	b.mu.Lock()
	b.fired = true
	b.mu.Unlock()
	_ = b.rc.Close() // unblocks the pending Read
}

func (b *idleBody) Read(p []byte) (int, error) {
	b.timer.Reset(b.idle)
	n, err := b.rc.Read(p)
	b.timer.Stop()
	b.mu.Lock()
	fired := b.fired
	b.mu.Unlock()
	if fired {
		return n, &idleTimeoutError{Idle: b.idle}
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	return b.rc.Close()
}
