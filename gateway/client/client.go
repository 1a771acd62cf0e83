// Package client is the Go client of `talaria serve`'s HTTP API: it
// drives a remote agent the way the CLI drives a local one (the same
// hooks, the same approver, the same turn.Result). It imports nothing of
// the server (no Prometheus, OpenTelemetry or gRPC), so a program that
// only talks to a server links only net/http and the engine's types.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// Client drives a remote `talaria serve` the way the CLI drives a local
// agent: the same hooks, the same approver, the same turn.Result.
type Client struct {
	BaseURL string // e.g. http://127.0.0.1:7420
	Token   string
	HTTP    *http.Client // nil: http.DefaultClient
}

// APIError is an error answer of the server.
type APIError struct {
	Status  int
	Code    api.ErrorCode
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("server answered %d %s: %s", e.Status, e.Code, e.Message)
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

func (c *Client) request(ctx context.Context, method, path string, body any, accept string) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.BaseURL, "/")+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		var e struct {
			Error struct {
				Code    api.ErrorCode
				Message string
			} `json:"error"`
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		_ = json.Unmarshal(b, &e)
		if e.Error.Message == "" {
			e.Error.Message = strings.TrimSpace(string(b))
		}
		return nil, &APIError{Status: resp.StatusCode, Code: e.Error.Code, Message: e.Error.Message}
	}
	return resp, nil
}

// Do sends a JSON request and decodes the JSON answer into out (may be nil).
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.request(ctx, method, path, body, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// CreateSession creates a session and returns its id.
func (c *Client) CreateSession(ctx context.Context) (string, error) {
	return c.CreateSessionModel(ctx, "")
}

// CreateSessionModel creates a session on model ("" = the server's
// default) and returns its id.
func (c *Client) CreateSessionModel(ctx context.Context, model string) (string, error) {
	body := map[string]any{}
	if model != "" {
		body["model"] = model
	}
	var s session
	if err := c.Do(ctx, "POST", "/v1/sessions", body, &s); err != nil {
		return "", err
	}
	return s.ID, nil
}

// LatestSession returns the most recently updated session's id.
func (c *Client) LatestSession(ctx context.Context) (string, error) {
	var out struct{ Sessions []session }
	if err := c.Do(ctx, "GET", "/v1/sessions?limit=1", nil, &out); err != nil {
		return "", err
	}
	if len(out.Sessions) == 0 {
		return "", errors.New("--continue: the server has no session of yours yet; run without it to start one")
	}
	return out.Sessions[0].ID, nil
}

// RunTurn sends text to a session and follows its turn to the end, calling
// hooks as the events arrive and asking approver about approval requests.
// Cancelling ctx interrupts the turn on the server (as Ctrl+C does locally)
// and still waits, up to a few seconds, for its result.
func (c *Client) RunTurn(ctx context.Context, sessionID, text string, hooks turn.Hooks, approver turn.Approver) (turn.Result, error) {
	res := turn.Result{SessionID: sessionID}
	// The stream outlives ctx so the interrupted turn's result still arrives.
	sctx, scancel := context.WithCancel(context.WithoutCancel(ctx))
	defer scancel()
	resp, err := c.request(sctx, "POST", "/v1/sessions/"+sessionID+"/messages", map[string]string{"text": text}, "text/event-stream")
	if err != nil {
		return res, err
	}
	turnID := resp.Header.Get("X-Turn-ID")
	res.TurnID = turnID
	stop := context.AfterFunc(ctx, func() {
		ictx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Do(ictx, "POST", "/v1/turns/"+turnID+"/interrupt", nil, nil)
		// If the server never answers, give up waiting.
		time.AfterFunc(15*time.Second, scancel)
	})
	defer stop()
	calls := map[string]llm.ToolCall{}
	var last int64
	for attempt := 0; ; attempt++ {
		done, err := c.follow(sctx, resp.Body, turnID, &last, hooks, approver, calls, &res)
		resp.Body.Close()
		if done {
			return res, nil
		}
		if sctx.Err() != nil || attempt >= 5 {
			if err == nil {
				err = errors.New("the event stream ended before the turn finished")
			}
			return res, fmt.Errorf("following turn %s: %w", turnID, err)
		}
		// Dropped: resume where we were.
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
		resp, err = c.request(sctx, "GET", "/v1/sessions/"+sessionID+"/events?after="+strconv.FormatInt(last, 10), nil, "text/event-stream")
		if err != nil {
			return res, err
		}
	}
}

// follow reads one stream; done reports that turn_finished arrived.
func (c *Client) follow(ctx context.Context, body io.Reader, turnID string, last *int64, hooks turn.Hooks, approver turn.Approver,
	calls map[string]llm.ToolCall, res *turn.Result) (done bool, err error) {
	var perr error
	err = ParseSSE(body, func(id int64, typ string, data []byte) bool {
		*last = id
		u, ok := decodeEvent(typ, data, turnID)
		if !ok {
			return true
		}
		switch u := u.(type) {
		case turn.ToolStarted:
			calls[u.CallID] = u.Call()
		case turn.ToolFinished:
			if u.Arguments == "" { // a server that does not send them
				u.Arguments = calls[u.CallID].Arguments
			}
			hooks.Emit(u)
			return true
		case turn.ApprovalRequired:
			decision, reason := api.DecisionDeny, ""
			if approver != nil {
				ok, why := approver.Approve(ctx, u.Call(), tool.Info{Name: u.Name, Description: u.Description})
				if ok {
					decision = api.DecisionAllow
				}
				reason = why
			}
			if err := c.Do(ctx, "POST", "/v1/turns/"+turnID+"/approvals/"+u.CallID, api.ApprovalAnswer{Decision: decision, Reason: reason}, nil); err != nil {
				var ae *APIError
				if !errors.As(err, &ae) || ae.Code != api.CodeNoApproval {
					perr = err
					return false
				}
			}
		case turn.Finished:
			*res = u.Result
			done = true
			if hooks.Sink != nil {
				hooks.Sink(u)
			}
			return false
		}
		hooks.Emit(u)
		return true
	})
	if perr != nil {
		err = perr
	}
	return done, err
}

// decodeEvent reads a turn's event as the update it carries; ok is false
// for another turn's events and for events that carry none (rows, queue
// changes, types a newer server added).
func decodeEvent(typ string, data []byte, turnID string) (turn.Update, bool) {
	var head struct {
		TurnID string          `json:"turn_id"`
		Update string          `json:"update"`
		Kind   turn.StatusKind `json:"kind"`
		Line   string          `json:"line"`
	}
	if json.Unmarshal(data, &head) != nil || head.TurnID != turnID {
		return nil, false
	}
	if typ != string(api.EventStatus) {
		u, err := turn.DecodeUpdate(typ, data)
		return u, err == nil
	}
	if head.Update != "" {
		var fields map[string]json.RawMessage
		if json.Unmarshal(data, &fields) == nil {
			if u, err := turn.DecodeUpdate(head.Update, fields[head.Update]); err == nil {
				return u, true
			}
		}
	}
	// A server that sends only the line (or an update this client does not
	// know): the line is all there is.
	return turn.StatusLine{Kind: head.Kind, Text: head.Line}, true
}

// Usage is a session's usage as the API reports it
// (GET /v1/sessions/{id}/usage, field "usage"): the public api.Usage.
type Usage = api.Usage

// Session returns the session id as the API shows it (the public
// api.Session, the CLI's --json shape too).
func (c *Client) Session(ctx context.Context, id string) (api.Session, error) {
	var s api.Session
	err := c.Do(ctx, "GET", "/v1/sessions/"+url.PathEscape(id), nil, &s)
	return s, err
}

// session is the part of the API's session view the client reads.
type session struct {
	ID string `json:"id"`
}

// ParseSSE reads Server-Sent Events from r and calls fn for each until fn
// returns false or the stream ends.
func ParseSSE(r io.Reader, fn func(id int64, typ string, data []byte) bool) error {
	br := newLineReader(r)
	var (
		id   int64
		typ  string
		data []byte
	)
	for {
		line, err := br.line()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		switch {
		case len(line) == 0:
			if typ != "" {
				if !fn(id, typ, data) {
					return nil
				}
			}
			typ, data = "", nil
		case bytes.HasPrefix(line, []byte("id: ")):
			id, _ = strconv.ParseInt(string(line[4:]), 10, 64)
		case bytes.HasPrefix(line, []byte("event: ")):
			typ = string(line[7:])
		case bytes.HasPrefix(line, []byte("data: ")):
			data = append(data, line[6:]...)
		}
	}
}
