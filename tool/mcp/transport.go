package mcp

import (
	"github.com/talaria-agent/talaria/tool/sandbox"
	"path/filepath"

	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// process is a running stdio server. Talaria owns the process (not the
// SDK's CommandTransport) so that exactly one goroutine waits for it, the
// whole process group can be signalled, and a crash is noticed at once.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has been reaped
	err    error         // Wait's error; read after exited is closed
	stderr *tailBuffer
	stdin  *os.File // our ends of the pipes, owned by the SDK connection
	stdout *os.File
}

// startProcess starts cfg's command with its stdin and stdout on pipes.
func startProcess(cfg ServerConfig) (*process, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_ = inR.Close()
		_ = inW.Close()
		return nil, err
	}
	argv := append([]string{cfg.Command}, cfg.Args...)
	confined := cfg.Sandbox != nil && cfg.Sandbox.Mode != sandbox.Off
	if confined {
		// Found here, so a missing command fails as it would unconfined,
		// not as bwrap's execvp.
		path := cfg.Command
		if strings.Contains(path, "/") && !filepath.IsAbs(path) && cfg.Dir != "" {
			path = filepath.Join(cfg.Dir, path)
		}
		if argv[0], err = exec.LookPath(path); err != nil {
			_, _, _, _ = inR.Close(), inW.Close(), outR.Close(), outW.Close()
			return nil, fmt.Errorf("start %s: %w", cfg.Command, err)
		}
	}
	if cfg.Sandbox != nil {
		if argv, err = cfg.Sandbox.Command(cfg.Dir, argv); err != nil {
			_, _, _, _ = inR.Close(), inW.Close(), outR.Close(), outW.Close()
			return nil, fmt.Errorf("start %s: %w", cfg.Command, err)
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = cfg.Dir
	cmd.Env = sandbox.Env(os.Environ(), cfg.EnvNames, confined)
	for k, v := range cfg.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p := &process{cmd: cmd, exited: make(chan struct{}), stderr: &tailBuffer{max: 4096}, stdin: inW, stdout: outR}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, p.stderr
	// Bounds Wait when a grandchild keeps stderr open after the server died.
	cmd.WaitDelay = 2 * time.Second
	ownGroup(cmd)
	err = cmd.Start()
	// The child has its copies; ours would keep the pipes open forever.
	_ = inR.Close()
	_ = outW.Close()
	if err != nil {
		_ = inW.Close()
		_ = outR.Close()
		return nil, fmt.Errorf("start %s: %w", cfg.Command, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

func (p *process) transport() sdk.Transport {
	return &sdk.IOTransport{Reader: p.stdout, Writer: p.stdin}
}

// stop ends the server the way the MCP spec asks (stdin closed by the
// caller first, then SIGTERM, then SIGKILL), and always kills what is left
// of its process group, so no helper outlives it. It returns once the
// process has been reaped.
func (p *process) stop(grace time.Duration) {
	pid := p.cmd.Process.Pid
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(grace):
		signalGroup(pid, sigTerm)
		select {
		case <-p.exited:
		case <-time.After(grace):
			signalGroup(pid, sigKill)
			<-p.exited
		}
	}
	signalGroup(pid, sigKill)
	_ = p.stdout.Close()
}

// exitText describes how the process ended, with the last line it wrote
// to stderr.
func (p *process) exitText() string {
	var b strings.Builder
	if p.err != nil {
		b.WriteString(p.err.Error())
	} else {
		b.WriteString("exit status 0")
	}
	if last := p.stderr.lastLine(); last != "" {
		fmt.Fprintf(&b, "; stderr: %s", last)
	}
	return b.String()
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if len(last) > 300 {
		last = last[:300] + "…"
	}
	return last
}

// httpTransport builds the transport of a remote server, with its headers
// added to every request.
func httpTransport(cfg ServerConfig) sdk.Transport {
	client := &http.Client{Transport: &headerRoundTripper{headers: cfg.Headers, next: http.DefaultTransport}}
	if cfg.Transport == "sse" {
		return &sdk.SSEClientTransport{Endpoint: cfg.URL, HTTPClient: client}
	}
	// Retries of a dead server would only delay the error result.
	return &sdk.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: client, MaxRetries: 1}
}

type headerRoundTripper struct {
	headers map[string]string
	next    http.RoundTripper
}

func (h *headerRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return h.next.RoundTrip(r)
}

// errNotRunning is the error of a call to a server with no live connection.
type errNotRunning struct{ reason string }

func (e *errNotRunning) Error() string { return e.reason }
