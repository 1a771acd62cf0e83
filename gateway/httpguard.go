package gateway

import (
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// DefaultReadTimeout bounds reading a non-streaming request (see
// Config.ReadTimeout).
const DefaultReadTimeout = 30 * time.Second

// streaming reports whether a request is an event stream, which lives
// past any read deadline.
func streaming(r *http.Request) bool {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/events") {
		return true
	}
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/messages") && wantsStream(r)
}

// securityHeaders are sent with every answer: the page may not be framed
// (clickjacking), no URL leaks in a Referer, HSTS under TLS.
func securityHeaders(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	if h.Get("Content-Security-Policy") == "" {
		h.Set("Content-Security-Policy", "frame-ancestors 'none'")
	}
	if r.TLS != nil {
		h.Set("Strict-Transport-Security", "max-age=31536000")
	}
}

// LimitListener caps the connections a listener hands out: at most total
// at once, and at most perAddr from one client address (IP). A connection
// over either cap is closed as soon as it is accepted, so a flood of idle
// sockets cannot use up the server's descriptors or goroutines; 0 means
// no cap of that kind.
func LimitListener(ln net.Listener, total, perAddr int) net.Listener {
	return &limitListener{Listener: ln, total: total, perAddr: perAddr, per: map[string]int{}}
}

type limitListener struct {
	net.Listener
	total, perAddr int

	mu   sync.Mutex
	open int
	per  map[string]int
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := c.RemoteAddr().String()
		if host, _, err := net.SplitHostPort(addr); err == nil {
			addr = host
		}
		l.mu.Lock()
		if (l.total > 0 && l.open >= l.total) || (l.perAddr > 0 && l.per[addr] >= l.perAddr) {
			l.mu.Unlock()
			_ = c.Close()
			continue
		}
		l.open++
		l.per[addr]++
		l.mu.Unlock()
		return &limitConn{Conn: c, l: l, addr: addr}, nil
	}
}

type limitConn struct {
	net.Conn
	l    *limitListener
	addr string
	once sync.Once
}

func (c *limitConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		if c.l.per[c.addr]--; c.l.per[c.addr] <= 0 {
			delete(c.l.per, c.addr)
		}
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}
