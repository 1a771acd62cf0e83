package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server states, as `talaria mcp list` shows them.
const (
	StateDisabled = "disabled" // enabled: false
	StateStarting = "starting"
	StateReady    = "ready"
	StateFailed   = "failed"  // could not start, or crashed too often
	StateCrashed  = "crashed" // lost; restarted at its next call
	StateClosed   = "closed"
)

// server is one configured server (or, for per-session servers, one
// session's instance of it) and its current connection.
type server struct {
	cfg ServerConfig
	m   *Manager

	// sem serializes (re)connecting; a channel so waiting honours ctx.
	sem chan struct{}
	// life ends when the server is closed, aborting a start in progress.
	life     context.Context
	stopLife context.CancelFunc

	mu        sync.Mutex
	conn      *conn
	state     string
	err       string
	tools     []*sdk.Tool // as last listed
	changed   bool        // tools/list_changed since the last listing
	crashes   int
	lastCrash time.Time
	closed    bool
	startTook time.Duration
}

// conn is one live connection to a server.
type conn struct {
	cs      *sdk.ClientSession
	proc    *process      // nil for remote servers
	done    chan struct{} // closed when the session has ended
	waitErr error         // why it ended; read after done is closed
	cancel  context.CancelFunc
	closing atomic.Bool // set when we end it on purpose
}

func newServer(m *Manager, cfg ServerConfig) *server {
	s := &server{cfg: cfg, m: m, sem: make(chan struct{}, 1), state: StateStarting}
	s.life, s.stopLife = context.WithCancel(context.Background())
	if cfg.Disabled {
		s.state = StateDisabled
	}
	return s
}

func (s *server) log() *slog.Logger { return s.m.log.With("mcp_server", s.cfg.Name) }

// start connects and lists the tools; failures are kept in the state and
// reported with one status line.
func (s *server) start(ctx context.Context) error {
	s.mu.Lock()
	skip := s.cfg.Disabled || s.conn != nil || s.closed || s.crashes > s.m.maxRestarts
	s.mu.Unlock()
	if skip {
		return nil
	}
	_, err := s.ensure(ctx)
	if err != nil {
		s.m.status(fmt.Sprintf("mcp: server %s failed to start: %s; its tools are not offered", s.cfg.Name, err))
	}
	return err
}

// ensure returns the live connection, (re)connecting when there is none:
// at start, and after a crash, with a backoff that doubles per crash and a
// bound on restarts.
func (s *server) ensure(ctx context.Context) (*conn, error) {
	if s.life.Err() != nil {
		return nil, s.shutDown()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.life, cancel)()
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, s.ctxErr(ctx)
	}
	defer func() { <-s.sem }()
	s.mu.Lock()
	c, closed, crashes, last, why := s.conn, s.closed, s.crashes, s.lastCrash, s.err
	s.mu.Unlock()
	switch {
	case c != nil:
		return c, nil
	case closed:
		return nil, s.shutDown()
	case s.cfg.Disabled:
		return nil, &errNotRunning{fmt.Sprintf("the MCP server %s is disabled", s.cfg.Name)}
	case crashes > s.m.maxRestarts:
		return nil, &errNotRunning{fmt.Sprintf("the MCP server %s is not running: it failed %d times (last: %s) and is not restarted again in this process", s.cfg.Name, crashes, why)}
	}
	if crashes > 0 {
		wait := s.m.backoff << (crashes - 1)
		if rest := time.Until(last.Add(wait)); rest > 0 {
			t := time.NewTimer(rest)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, s.ctxErr(ctx)
			}
		}
	}
	start := time.Now()
	c, tools, err := s.connect(ctx)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		if c != nil {
			c.shutdown(s.m.grace)
		}
		return nil, s.shutDown()
	}
	defer s.mu.Unlock()
	if err != nil {
		// A failed start counts like a crash, so retries (at the next
		// session, or the next call after a crash) are bounded too.
		s.crashes++
		s.lastCrash = time.Now()
		s.state, s.err = StateFailed, err.Error()
		return nil, err
	}
	s.conn, s.state, s.err = c, StateReady, ""
	s.startTook = time.Since(start)
	if s.tools == nil || crashes == 0 {
		s.tools = tools
	}
	go s.watch(c)
	if crashes > 0 {
		s.log().Info("mcp server restarted", "after_crashes", crashes)
	}
	return c, nil
}

func (s *server) shutDown() error {
	return &errNotRunning{fmt.Sprintf("the MCP server %s has been shut down", s.cfg.Name)}
}

// ctxErr is why ctx ended: the server's shut-down, or the caller's
// cancellation.
func (s *server) ctxErr(ctx context.Context) error {
	if s.life.Err() != nil {
		return s.shutDown()
	}
	return ctx.Err()
}

// connect starts or dials the server, runs the MCP handshake and lists its
// tools, all within the start timeout.
func (s *server) connect(ctx context.Context) (*conn, []*sdk.Tool, error) {
	cfg, err := s.cfg.expanded(s.m.getenv)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.startTimeout())
	defer cancel()
	var proc *process
	var t sdk.Transport
	if cfg.Command != "" {
		if proc, err = startProcess(cfg); err != nil {
			return nil, nil, err
		}
		t = proc.transport()
	} else {
		t = httpTransport(cfg)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "talaria", Version: s.m.version}, &sdk.ClientOptions{
		Logger:                 slog.New(slog.DiscardHandler),
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { s.toolsChanged() },
	})
	fail := func(err error) (*conn, []*sdk.Tool, error) {
		if proc != nil {
			proc.stop(0)
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, nil, fmt.Errorf("no answer within %s", cfg.startTimeout())
			}
			return nil, nil, fmt.Errorf("%s (%s)", shortErr(err), proc.exitText())
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, nil, fmt.Errorf("no answer from %s within %s", cfg.URL, cfg.startTimeout())
		}
		return nil, nil, errors.New(shortErr(err))
	}
	// Some transports (HTTP+SSE) keep their stream on the context given
	// to Connect, so it must live as long as the connection; the start
	// timeout and the caller's cancellation only bound the handshake.
	connCtx, connCancel := context.WithCancel(s.life)
	detach := context.AfterFunc(ctx, connCancel)
	cs, err := client.Connect(connCtx, t, nil)
	if err != nil {
		connCancel()
		return fail(err)
	}
	c := &conn{cs: cs, proc: proc, done: make(chan struct{}), cancel: connCancel}
	go func() {
		c.waitErr = cs.Wait()
		close(c.done)
	}()
	tools, err := listTools(ctx, cs)
	if err != nil {
		c.closing.Store(true)
		_ = cs.Close()
		connCancel()
		return fail(fmt.Errorf("list tools: %w", err))
	}
	if !detach() {
		// The handshake's context ended just now.
		c.closing.Store(true)
		_ = cs.Close()
		return fail(ctx.Err())
	}
	return c, tools, nil
}

func listTools(ctx context.Context, cs *sdk.ClientSession) ([]*sdk.Tool, error) {
	var out []*sdk.Tool
	var cursor string
	for range 100 { // bound a server that pages forever
		res, err := cs.ListTools(ctx, &sdk.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, err
		}
		out = append(out, res.Tools...)
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	return out, nil
}

// watch notices a connection that ends without us ending it.
func (s *server) watch(c *conn) {
	var why string
	if c.proc != nil {
		select {
		case <-c.proc.exited:
		case <-c.done:
		}
		why = c.exitReason()
	} else {
		<-c.done
		why = "closed the connection"
	}
	if !c.closing.Load() {
		s.lost(c, why)
	}
}

// lost retires a connection that died: it is shut down (the process reaped,
// its group killed) and the next call restarts the server. One status line
// tells the user.
func (s *server) lost(c *conn, why string) {
	s.mu.Lock()
	if s.conn != c {
		s.mu.Unlock()
		return
	}
	s.conn = nil
	s.crashes++
	s.lastCrash = time.Now()
	s.state, s.err = StateCrashed, why
	n := s.crashes
	if n > s.m.maxRestarts {
		s.state = StateFailed
	}
	s.mu.Unlock()
	if n > s.m.maxRestarts {
		s.m.status(fmt.Sprintf("mcp: server %s %s; it failed %d times and is not restarted again", s.cfg.Name, why, n))
	} else {
		s.m.status(fmt.Sprintf("mcp: server %s %s; it will be restarted for its next call (restart %d of %d)", s.cfg.Name, why, n, s.m.maxRestarts))
	}
	c.shutdown(s.m.grace)
}

// exitReason says how a dead connection ended. The connection and, for a
// stdio server, the process end within moments of each other, in either
// order; wait (briefly) for both, since the SDK's read error and the exit
// status with the last stderr line say far more than "closed".
func (c *conn) exitReason() string {
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
	}
	var exited <-chan struct{}
	if c.proc != nil {
		exited = c.proc.exited
		select {
		case <-exited:
		case <-t.C:
		}
	}
	select {
	case <-c.done:
		if err := c.waitErr; err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, os.ErrClosed) {
			// The SDK dropped the connection over what the server sent;
			// the process exiting afterwards is a consequence.
			return "sent something that is not MCP (" + shortErr(err) + ")"
		}
	default:
	}
	select {
	case <-exited:
		return "exited (" + c.proc.exitText() + ")"
	default:
	}
	return "closed the connection"
}

// shutdown ends the connection: the stdio process is stopped (stdin
// closed, then SIGTERM, then SIGKILL to its group) and reaped.
func (c *conn) shutdown(grace time.Duration) {
	c.closing.Store(true)
	if c.proc != nil {
		c.proc.stop(grace)
	}
	closed := make(chan struct{})
	go func() {
		_ = c.cs.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(grace + time.Second):
		// A remote server that does not answer the close; the HTTP
		// requests end with their context, cancelled below.
	}
	c.cancel()
}

func (s *server) toolsChanged() {
	s.mu.Lock()
	already := s.changed
	s.changed = true
	s.mu.Unlock()
	if !already {
		s.m.status(fmt.Sprintf("mcp: server %s changed its tool list; the change takes effect at the next session", s.cfg.Name))
	}
}

// snapshot returns the tools to offer a new session, listing them again
// when the server said they changed.
func (s *server) snapshot(ctx context.Context) []*sdk.Tool {
	s.mu.Lock()
	c, changed, tools := s.conn, s.changed, s.tools
	s.mu.Unlock()
	if changed && c != nil {
		lctx, cancel := context.WithTimeout(ctx, s.cfg.startTimeout())
		fresh, err := listTools(lctx, c.cs)
		cancel()
		if err == nil {
			s.mu.Lock()
			s.tools, s.changed, tools = fresh, false, fresh
			s.mu.Unlock()
		}
	}
	return tools
}

func (s *server) close() {
	s.stopLife()
	// Wait out a start in progress: it sees the server closed and stops
	// what it started.
	s.sem <- struct{}{}
	defer func() { <-s.sem }()
	s.mu.Lock()
	c := s.conn
	s.conn, s.closed = nil, true
	if s.state != StateDisabled {
		s.state = StateClosed
	}
	s.mu.Unlock()
	if c != nil {
		c.shutdown(s.m.grace)
	}
}

// call runs one tool call within the server's timeout. Every failure comes
// back as an error whose text is written for the model.
func (s *server) call(ctx context.Context, name string, args json.RawMessage) (*sdk.CallToolResult, error) {
	c, err := s.ensure(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("the call to %s on MCP server %s was interrupted before it started", name, s.cfg.Name)
		}
		return nil, fmt.Errorf("the MCP server %s is not available: %w", s.cfg.Name, err)
	}
	timeout := s.cfg.timeout()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	res, err := c.cs.CallTool(cctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err == nil {
		return res, nil
	}
	var rpcErr *jsonrpc.Error
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("the call to %s on MCP server %s was interrupted; the server was told to cancel it", name, s.cfg.Name)
	case cctx.Err() != nil:
		s.m.status(fmt.Sprintf("mcp: server %s did not answer %s within %s; the call was cancelled", s.cfg.Name, name, timeout))
		return nil, fmt.Errorf("the MCP server %s did not answer the call to %s within %s; the call was cancelled. Retry only if it is likely to finish faster", s.cfg.Name, name, timeout)
	case errors.As(err, &rpcErr):
		return nil, fmt.Errorf("the MCP server %s rejected the call to %s: %s", s.cfg.Name, name, rpcErr.Message)
	}
	// The connection may have died under the call: give the watcher a
	// moment to see the process exit, so the message says why.
	dead := false
	var exited <-chan struct{}
	if c.proc != nil {
		exited = c.proc.exited
	}
	t := time.NewTimer(2 * time.Second)
	select {
	case <-c.done:
		dead = true
	case <-exited:
		dead = true
	case <-t.C:
	}
	t.Stop()
	if s.life.Err() != nil {
		return nil, fmt.Errorf("the MCP server %s was shut down during the call to %s", s.cfg.Name, name)
	}
	if !dead {
		return nil, fmt.Errorf("the MCP server %s gave an unusable answer to %s: %s", s.cfg.Name, name, shortErr(err))
	}
	why := c.exitReason()
	s.lost(c, why+" during a call to "+name)
	return nil, fmt.Errorf("the MCP server %s failed during the call to %s: it %s; it is restarted for later calls, but this call's effect is unknown", s.cfg.Name, name, why)
}

// shortErr is an error's text on one line, without the SDK's wrapping of
// EOF as something mysterious.
func shortErr(err error) string {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "the server closed the connection"
	}
	msg := strings.Join(strings.Fields(err.Error()), " ")
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return msg
}
