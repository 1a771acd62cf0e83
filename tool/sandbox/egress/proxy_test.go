package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// logBuf collects the proxy's log.
type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startProxy serves a proxy allowing hosts on a Unix socket and returns
// an HTTP client that reaches it only through that socket.
func startProxy(t *testing.T, hosts ...string) (*http.Client, *logBuf, *Proxy) {
	t.Helper()
	rules, err := Parse(hosts)
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuf{}
	p := New(rules, slog.New(slog.NewTextHandler(logs, nil)))
	sock := filepath.Join(t.TempDir(), "p.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.Serve(ln) }()
	t.Cleanup(func() { _ = p.Close() })
	tr := &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "proxy.invalid:3128"}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // httptest's certificate; the test is about the tunnel
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}, logs, p
}

func hostPort(t *testing.T, raw string) (string, string) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Hostname(), u.Port()
}

// TestProxyAllowsAndRefuses: through the Unix socket, plain HTTP and a
// CONNECT tunnel (HTTPS) reach a listed local server; an unlisted port, an
// unlisted name and a listed name resolving to loopback get the sandbox's
// 403, and each decision is logged.
func TestProxyAllowsAndRefuses(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "plain-ok %s", r.URL.Path)
	}))
	defer ok.Close()
	tlsOK := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "tls-ok")
	}))
	defer tlsOK.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "must-not-reach")
	}))
	defer other.Close()
	_, okPort := hostPort(t, ok.URL)
	_, tlsPort := hostPort(t, tlsOK.URL)
	_, otherPort := hostPort(t, other.URL)
	client, logs, _ := startProxy(t, "127.0.0.1:"+okPort, "127.0.0.1:"+tlsPort, "localhost", "example.invalid")

	for _, c := range []struct {
		name, url string
		code      int
		body      string
	}{
		{"plain http listed", ok.URL + "/x", 200, "plain-ok /x"},
		{"https tunnel listed", tlsOK.URL, 200, "tls-ok"},
		{"unlisted port", other.URL, 403, "not in the sandbox's network list"},
		{"unlisted name", "http://unlisted.invalid:" + okPort + "/", 403, "not in the sandbox's network list"},
		{"listed name on loopback", "http://localhost:" + otherPort + "/", 403, "resolves to loopback address"},
		{"metadata", "http://169.254.169.254/latest/meta-data/", 403, "not in the sandbox's network list"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, err := client.Get(c.url)
			if strings.HasPrefix(c.url, "https") && c.code != 200 {
				// A refused CONNECT surfaces as a client error naming the status.
				if err == nil || !strings.Contains(err.Error(), "Forbidden") {
					t.Fatalf("want a refused tunnel, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.code || !strings.Contains(string(b), c.body) {
				t.Errorf("got %d %q, want %d containing %q", resp.StatusCode, b, c.code, c.body)
			}
			if c.code == 403 && strings.Contains(string(b), "must-not-reach") {
				t.Errorf("the refused request reached the server")
			}
		})
	}
	// A refused https tunnel: CONNECT to the unlisted port.
	tlsOther := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer tlsOther.Close()
	if _, err := client.Get(tlsOther.URL); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("CONNECT to an unlisted port: want Forbidden, got %v", err)
	}
	l := logs.String()
	for _, want := range []string{"sandbox egress allowed", "sandbox egress refused", "port=" + otherPort} {
		if !strings.Contains(l, want) {
			t.Errorf("the log lacks %q:\n%s", want, l)
		}
	}
}

// TestProxyRawCONNECT: the 403 of a refused CONNECT carries the body
// naming the rule, and bytes sent right after CONNECT reach the server.
func TestProxyRawCONNECT(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	rules, _ := Parse([]string{echo.Addr().String()})
	p := New(rules, nil)
	defer p.Close()
	for _, c := range []struct {
		target string
		want   string
	}{
		{echo.Addr().String(), "HTTP/1.1 200 Connection established\r\n\r\nping"},
		{"127.0.0.1:1", "HTTP/1.1 403 Forbidden"},
	} {
		a, b := net.Pipe()
		go func() { p.handle(b); _ = b.Close() }()
		go func() {
			_, _ = fmt.Fprintf(a, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\nping", c.target, c.target)
		}()
		r := bufio.NewReader(a)
		buf := make([]byte, len(c.want))
		if _, err := io.ReadFull(r, buf); err != nil || string(buf) != c.want {
			t.Errorf("CONNECT %s: got %q (%v), want %q", c.target, buf, err, c.want)
		}
		if strings.Contains(c.want, "403") {
			rest, _ := io.ReadAll(r)
			if !strings.Contains(string(rest), "refused by the sandbox: not in the sandbox's network list (sandbox.network: "+echo.Addr().String()+")") {
				t.Errorf("403 body does not name the rule: %q", rest)
			}
		}
		_ = a.Close()
	}
}

func TestDialDenied(t *testing.T) {
	rules, _ := Parse([]string{"localhost:80"})
	_, err := New(rules, nil).Dial(context.Background(), "localhost", 80)
	var d *DeniedError
	if !errors.As(err, &d) || !strings.Contains(d.Reason, "loopback") {
		t.Errorf("localhost resolving to loopback: want a DeniedError, got %v", err)
	}
}
