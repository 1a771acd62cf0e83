package egress

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Pool runs one proxy per distinct host list (the session's, each MCP
// server's), each on a Unix socket in a private directory, started on
// first use; Close stops them all and removes the directory.
type Pool struct {
	relay string
	log   *slog.Logger

	mu      sync.Mutex
	dir     string
	proxies map[string]*running
	closed  bool
}

type running struct {
	socket string
	proxy  *Proxy
}

// NewPool returns a pool whose routes name relay (the talaria binary,
// run inside the sandbox as the relay); proxies log to log.
func NewPool(relay string, log *slog.Logger) *Pool {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Pool{relay: relay, log: log, proxies: map[string]*running{}}
}

// ErrPoolClosed is returned by Route after Close.
var ErrPoolClosed = errors.New("egress proxies are closed")

// Route returns the Unix socket of the proxy allowing hosts, starting it
// if needed, and the relay binary to run inside the sandbox.
func (p *Pool) Route(hosts []string) (socket, relay string, err error) {
	rules, err := Parse(hosts)
	if err != nil {
		return "", "", err
	}
	if len(rules) == 0 {
		return "", "", fmt.Errorf("sandbox network list is empty")
	}
	if p.relay == "" {
		return "", "", fmt.Errorf("sandbox network list: no relay binary")
	}
	key := rules.String()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return "", "", ErrPoolClosed
	}
	if r, ok := p.proxies[key]; ok {
		return r.socket, p.relay, nil
	}
	if p.dir == "" {
		// Private: only this user may connect to the sockets.
		if p.dir, err = os.MkdirTemp("", "talaria-egress-"); err != nil {
			return "", "", fmt.Errorf("sandbox egress: %w", err)
		}
	}
	socket = filepath.Join(p.dir, "proxy-"+strconv.Itoa(len(p.proxies))+".sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		return "", "", fmt.Errorf("sandbox egress: %w", err)
	}
	px := New(rules, p.log.With("sandbox_network", key))
	go func() { _ = px.Serve(ln) }()
	p.proxies[key] = &running{socket: socket, proxy: px}
	p.log.Debug("sandbox egress proxy started", "socket", socket, "hosts", key)
	return socket, p.relay, nil
}

// Close stops every proxy (ending their tunnels) and removes the sockets.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	proxies := p.proxies
	p.proxies = map[string]*running{}
	dir := p.dir
	p.mu.Unlock()
	for _, r := range proxies {
		_ = r.proxy.Close()
	}
	if dir != "" && strings.Contains(filepath.Base(dir), "talaria-egress-") {
		return os.RemoveAll(dir)
	}
	return nil
}
