// Package acp speaks the Agent Client Protocol (https://agentclientprotocol.com,
// schema v1) as an agent: JSON-RPC 2.0 over newline-delimited stdio, so an
// editor (Zed, JetBrains, Neovim, Emacs, VS Code extensions) can drive durable
// Talaria turns.
package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
)

// JSON-RPC and ACP error codes (schema ErrorCode).
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	CodeAuthRequired   = -32000
	CodeNotFound       = -32002
	CodeCancelled      = -32800
)

// maxLine bounds one message: a prompt with an embedded file can be large,
// but a line without end must not take all memory.
const maxLine = 64 << 20

// Error is a JSON-RPC error object; handlers return it to choose the code.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("acp error %d: %s", e.Code, e.Message) }

// Errorf builds an *Error.
func Errorf(code int, format string, a ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, a...)}
}

// ErrClosed is returned by Call once the connection is closed.
var ErrClosed = errors.New("acp: connection closed")

// message is any JSON-RPC 2.0 message; which fields are set says which kind.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Handler answers the peer's requests and notifications. For a notification
// (isNotification) the result is dropped. Requests are handled each on its
// own goroutine (a prompt runs while a cancel arrives); notifications in the
// order they arrive, on the reading goroutine, so they must return quickly.
type Handler func(ctx context.Context, method string, params json.RawMessage, isNotification bool) (any, error)

// Conn is one JSON-RPC 2.0 connection with newline-delimited framing: each
// message is one line of compact JSON (no embedded newlines, as the ACP
// transport requires).
type Conn struct {
	r       *bufio.Reader
	w       io.Writer
	handler Handler
	log     *slog.Logger

	wmu sync.Mutex // one message per write, never interleaved

	mu      sync.Mutex
	nextID  int64
	pending map[string]chan *message
	closed  bool
	wg      sync.WaitGroup
}

// NewConn makes a connection reading r and writing w; Serve starts it.
func NewConn(r io.Reader, w io.Writer, h Handler, log *slog.Logger) *Conn {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Conn{r: bufio.NewReaderSize(r, 64<<10), w: w, handler: h, log: log, pending: map[string]chan *message{}}
}

// Serve reads messages until r ends or ctx is done, then cancels the
// handlers still running, waits for them, and fails pending calls.
func (c *Conn) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		c.wg.Wait()
		c.mu.Lock()
		c.closed = true
		for id, ch := range c.pending {
			close(ch)
			delete(c.pending, id)
		}
		c.mu.Unlock()
	}()
	lines := make(chan []byte)
	errc := make(chan error, 1)
	go func() {
		for {
			line, err := readLine(c.r)
			if err != nil {
				errc <- err
				return
			}
			select {
			case lines <- line:
			case <-ctx.Done():
				errc <- ctx.Err()
				return
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		case line := <-lines:
			c.dispatch(ctx, line)
		}
	}
}

// readLine returns the next non-empty line without its end.
func readLine(r *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		part, isPrefix, err := r.ReadLine()
		if err != nil {
			if len(buf) > 0 && errors.Is(err, io.EOF) {
				return buf, nil
			}
			return nil, err
		}
		buf = append(buf, part...)
		if len(buf) > maxLine {
			return nil, fmt.Errorf("acp: a message is longer than %d bytes", maxLine)
		}
		if isPrefix {
			continue
		}
		if len(bytes.TrimSpace(buf)) == 0 {
			buf = buf[:0]
			continue
		}
		return buf, nil
	}
}

func (c *Conn) dispatch(ctx context.Context, line []byte) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		c.reply(json.RawMessage("null"), nil, Errorf(CodeParseError, "not JSON: %v", err))
		return
	}
	if m.JSONRPC != "2.0" {
		c.reply(idOrNull(m.ID), nil, Errorf(CodeInvalidRequest, `"jsonrpc" must be "2.0"`))
		return
	}
	switch {
	case m.Method == "" && len(m.ID) > 0: // a response to one of our calls
		c.mu.Lock()
		ch, ok := c.pending[string(m.ID)]
		delete(c.pending, string(m.ID))
		c.mu.Unlock()
		if ok {
			ch <- &m
		} else {
			c.log.Debug("acp: response to no pending call", "id", string(m.ID))
		}
	case m.Method == "":
		c.reply(idOrNull(m.ID), nil, Errorf(CodeInvalidRequest, "a request needs a method"))
	case len(m.ID) == 0:
		if _, err := c.handler(ctx, m.Method, m.Params, true); err != nil {
			c.log.Debug("acp: notification failed", "method", m.Method, "err", err)
		}
	default:
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			res, err := c.handler(ctx, m.Method, m.Params, false)
			c.reply(m.ID, res, err)
		}()
	}
}

func idOrNull(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return json.RawMessage("null")
	}
	return id
}

// reply answers request id with res, or with err (an *Error keeps its code;
// anything else is an internal error).
func (c *Conn) reply(id json.RawMessage, res any, err error) {
	m := message{JSONRPC: "2.0", ID: id}
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Code: CodeInternalError, Message: err.Error()}
		}
		m.Error = e
	} else {
		b, merr := json.Marshal(res)
		if merr != nil {
			m.Error = Errorf(CodeInternalError, "encoding the result: %v", merr)
		} else {
			m.Result = b
		}
	}
	if werr := c.write(&m); werr != nil {
		c.log.Debug("acp: writing a response", "err", werr)
	}
}

func (c *Conn) write(m *message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.w.Write(b)
	return err
}

// Notify sends a notification.
func (c *Conn) Notify(method string, params any) error {
	b, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("acp: encoding %s: %w", method, err)
	}
	return c.write(&message{JSONRPC: "2.0", Method: method, Params: b})
}

// Call sends a request to the peer and decodes its result into out.
func (c *Conn) Call(ctx context.Context, method string, params, out any) error {
	b, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("acp: encoding %s: %w", method, err)
	}
	ch := make(chan *message, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.nextID++
	id := json.RawMessage(strconv.FormatInt(c.nextID, 10))
	c.pending[string(id)] = ch
	c.mu.Unlock()
	if err := c.write(&message{JSONRPC: "2.0", ID: id, Method: method, Params: b}); err != nil {
		c.forget(id)
		return fmt.Errorf("acp: sending %s: %w", method, err)
	}
	select {
	case <-ctx.Done():
		c.forget(id)
		return ctx.Err()
	case m, ok := <-ch:
		if !ok {
			return ErrClosed
		}
		if m.Error != nil {
			return m.Error
		}
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(m.Result, out); err != nil {
			return fmt.Errorf("acp: decoding the answer to %s: %w", method, err)
		}
		return nil
	}
}

func (c *Conn) forget(id json.RawMessage) {
	c.mu.Lock()
	delete(c.pending, string(id))
	c.mu.Unlock()
}
