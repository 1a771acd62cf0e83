package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// DeniedError is a connection the sandbox's host list does not allow.
type DeniedError struct {
	Host   string
	Port   int
	Reason string
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("connection to %s refused by the sandbox: %s", net.JoinHostPort(e.Host, strconv.Itoa(e.Port)), e.Reason)
}

// Proxy connects confined processes to the hosts its rules allow.
type Proxy struct {
	rules    Rules
	log      *slog.Logger
	resolver *net.Resolver
	dialer   net.Dialer
	http     *http.Transport

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	lns   []net.Listener
	done  bool
	wg    sync.WaitGroup
}

// New returns a proxy allowing rules; it logs each decision to log.
func New(rules Rules, log *slog.Logger) *Proxy {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Proxy{rules: rules, log: log, resolver: net.DefaultResolver,
		dialer: net.Dialer{Timeout: 15 * time.Second}, conns: map[net.Conn]struct{}{}}
	p.http = &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			n, _ := strconv.Atoi(port)
			return p.Dial(ctx, host, n)
		},
		DisableKeepAlives:     true,
		ResponseHeaderTimeout: 2 * time.Minute,
	}
	return p
}

// Dial connects to host:port if the rules allow it: the host must match
// an entry, and every address it is reached at must not be loopback,
// link-local, metadata or the like unless an entry names that address.
// A refusal is a *DeniedError.
func (p *Proxy) Dial(ctx context.Context, host string, port int) (net.Conn, error) {
	host = normHost(host)
	rule, ok := p.rules.Match(host, port)
	if !ok {
		return nil, p.deny(host, port, "not in the sandbox's network list (sandbox.network: "+p.rules.String()+")")
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		// Resolved here, and the address dialled is the one checked: a
		// name cannot re-resolve elsewhere between check and connect.
		if addrs, err = p.resolver.LookupNetIP(ctx, "ip", host); err != nil {
			p.log.Info("sandbox egress failed", "host", host, "port", port, "rule", rule.String(), "err", err)
			return nil, fmt.Errorf("resolve %s: %w", host, err)
		}
	}
	var lastErr error
	for _, a := range addrs {
		a = a.Unmap()
		if why := special(a); why != "" && !p.rules.listedAddr(a, port) {
			lastErr = p.deny(host, port, fmt.Sprintf("resolves to %s address %s, allowed only when listed as an address "+
				"(sandbox.network: [%s])", why, a, net.JoinHostPort(a.String(), strconv.Itoa(port))))
			continue
		}
		c, err := p.dialer.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err != nil {
			lastErr = err
			continue
		}
		p.log.Info("sandbox egress allowed", "host", host, "port", port, "addr", a.String(), "rule", rule.String())
		return c, nil
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("%s has no address", host)
	}
	var d *DeniedError
	if !errors.As(lastErr, &d) {
		p.log.Info("sandbox egress failed", "host", host, "port", port, "rule", rule.String(), "err", lastErr)
	}
	return nil, lastErr
}

func (p *Proxy) deny(host string, port int, reason string) error {
	p.log.Warn("sandbox egress refused", "host", host, "port", port, "reason", reason)
	return &DeniedError{Host: host, Port: port, Reason: reason}
}

// Serve accepts connections on ln until Close (or ln fails).
func (p *Proxy) Serve(ln net.Listener) error {
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		_ = ln.Close()
		return net.ErrClosed
	}
	p.lns = append(p.lns, ln)
	p.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		if !p.track(c, true) {
			_ = c.Close()
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.track(c, false)
			defer c.Close()
			p.handle(c)
		}()
	}
}

func (p *Proxy) track(c net.Conn, add bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		if p.done {
			return false
		}
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
	return true
}

// Close stops the listeners and ends every connection, tunnels included.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.done = true
	for _, ln := range p.lns {
		_ = ln.Close()
	}
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	p.http.CloseIdleConnections()
	return nil
}

// handle serves one client connection: one CONNECT tunnel, or one plain
// HTTP request (answered with Connection: close).
func (p *Proxy) handle(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if req.Method == http.MethodConnect {
		p.tunnel(ctx, c, br, req)
		return
	}
	if !req.URL.IsAbs() || req.URL.Scheme != "http" {
		reply(c, http.StatusBadRequest, "Talaria sandbox proxy: send https through CONNECT and http as an absolute URI ("+
			"http_proxy/https_proxy are set for this)\n")
		return
	}
	out := req.Clone(ctx)
	out.RequestURI = ""
	for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "Connection", "Keep-Alive", "Te", "Upgrade"} {
		out.Header.Del(h)
	}
	out.Close = true
	resp, err := p.http.RoundTrip(out)
	if err != nil {
		p.refuse(c, err)
		return
	}
	defer resp.Body.Close()
	resp.Close = true
	_ = resp.Write(c)
}

func (p *Proxy) tunnel(ctx context.Context, c net.Conn, br *bufio.Reader, req *http.Request) {
	host, port, err := net.SplitHostPort(req.Host)
	n, perr := strconv.Atoi(port)
	if err != nil || perr != nil {
		reply(c, http.StatusBadRequest, "Talaria sandbox proxy: CONNECT needs host:port\n")
		return
	}
	up, err := p.Dial(ctx, host, n)
	if err != nil {
		p.refuse(c, err)
		return
	}
	if !p.track(up, true) {
		_ = up.Close()
		return
	}
	defer p.track(up, false)
	defer up.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	if k := br.Buffered(); k > 0 {
		b, _ := br.Peek(k)
		if _, err := up.Write(b); err != nil {
			return
		}
	}
	splice(c, up)
}

// splice copies both ways between a and b until both directions ended,
// half-closing each side's write end when its source is done.
func splice(a, b net.Conn) {
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(b, a)
	go pipe(a, b)
	<-done
	<-done
}

// refuse answers a failed connection: 403 naming the sandbox rule for a
// refusal, 502 otherwise.
func (p *Proxy) refuse(c net.Conn, err error) {
	var d *DeniedError
	if errors.As(err, &d) {
		reply(c, http.StatusForbidden, "Talaria: "+d.Error()+"\n")
		return
	}
	reply(c, http.StatusBadGateway, "Talaria sandbox proxy: "+err.Error()+"\n")
}

func reply(c net.Conn, code int, body string) {
	_, _ = fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, http.StatusText(code), len(body), body)
}
