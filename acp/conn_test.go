package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// peer is the other end of a Conn: it writes lines to the Conn and reads
// the Conn's lines.
type peer struct {
	t    *testing.T
	in   *io.PipeWriter // to the Conn
	out  *bufio.Scanner // from the Conn
	conn *Conn
	done chan error
}

func newPeer(t *testing.T, h Handler) *peer {
	t.Helper()
	r1, w1 := io.Pipe()
	r2, w2 := io.Pipe()
	c := NewConn(r1, w2, h, nil)
	p := &peer{t: t, in: w1, out: bufio.NewScanner(r2), conn: c, done: make(chan error, 1)}
	p.out.Buffer(make([]byte, 1<<20), 8<<20)
	go func() { p.done <- c.Serve(context.Background()); _ = w2.Close() }()
	t.Cleanup(func() { _ = w1.Close() })
	return p
}

func (p *peer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

func (p *peer) recv() map[string]any {
	p.t.Helper()
	if !p.out.Scan() {
		p.t.Fatalf("no message: %v", p.out.Err())
	}
	var m map[string]any
	if err := json.Unmarshal(p.out.Bytes(), &m); err != nil {
		p.t.Fatalf("not one JSON message a line: %q: %v", p.out.Text(), err)
	}
	return m
}

func echo(_ context.Context, method string, params json.RawMessage, _ bool) (any, error) {
	switch method {
	case "echo":
		return params, nil
	case "fail":
		return nil, Errorf(CodeNotFound, "nothing here")
	case "boom":
		return nil, errors.New("plain error")
	}
	return nil, Errorf(CodeMethodNotFound, "unknown %s", method)
}

func errCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	if e == nil {
		return 0
	}
	return int(e["code"].(float64))
}

func TestConnFraming(t *testing.T) {
	long := strings.Repeat("x", 200<<10) // longer than the reader's buffer
	tests := []struct {
		name   string
		line   string
		wantID any
		code   int
		result string
	}{
		{"number id", `{"jsonrpc":"2.0","id":7,"method":"echo","params":{"a":1}}`, 7.0, 0, `{"a":1}`},
		{"string id", `{"jsonrpc":"2.0","id":"x-1","method":"echo","params":[1]}`, "x-1", 0, `[1]`},
		{"long line", `{"jsonrpc":"2.0","id":1,"method":"echo","params":"` + long + `"}`, 1.0, 0, `"` + long + `"`},
		{"typed error keeps its code", `{"jsonrpc":"2.0","id":2,"method":"fail"}`, 2.0, CodeNotFound, ""},
		{"plain error is internal", `{"jsonrpc":"2.0","id":3,"method":"boom"}`, 3.0, CodeInternalError, ""},
		{"unknown method", `{"jsonrpc":"2.0","id":4,"method":"nope"}`, 4.0, CodeMethodNotFound, ""},
		{"not JSON", `{"jsonrpc":`, nil, CodeParseError, ""},
		{"wrong version", `{"jsonrpc":"1.0","id":5,"method":"echo"}`, 5.0, CodeInvalidRequest, ""},
		{"no method", `{"jsonrpc":"2.0","id":6,"params":{}}`, nil, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPeer(t, echo)
			if tc.name == "no method" {
				// A response to nothing pending is dropped, not answered;
				// the next request still gets its answer.
				p.send(tc.line)
				p.send(`{"jsonrpc":"2.0","id":9,"method":"echo","params":1}`)
				if m := p.recv(); m["id"] != 9.0 {
					t.Fatalf("got %v", m)
				}
				return
			}
			p.send("")
			p.send(tc.line)
			m := p.recv()
			if m["jsonrpc"] != "2.0" || m["id"] != tc.wantID {
				t.Fatalf("envelope %v, want id %v", m, tc.wantID)
			}
			if got := errCode(m); got != tc.code {
				t.Fatalf("error code %d, want %d (%v)", got, tc.code, m)
			}
			if tc.result != "" {
				b, _ := json.Marshal(m["result"])
				if string(b) != tc.result {
					t.Fatalf("result %.80s, want %.80s", b, tc.result)
				}
			}
		})
	}
}

func TestConnNotificationGetsNoAnswer(t *testing.T) {
	got := make(chan string, 1)
	p := newPeer(t, func(_ context.Context, method string, _ json.RawMessage, note bool) (any, error) {
		if note {
			got <- method
			return nil, errors.New("ignored")
		}
		return "ok", nil
	})
	p.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"x"}`)
	if m := p.recv(); m["id"] != 1.0 {
		t.Fatalf("first message out is %v: the notification was answered", m)
	}
	if m := <-got; m != "session/cancel" {
		t.Fatal(m)
	}
}

func TestConnCallRoundTrip(t *testing.T) {
	p := newPeer(t, echo)
	type res struct {
		V   int
		err error
	}
	results := make(chan res, 2)
	go func() {
		var v struct{ V int }
		err := p.conn.Call(context.Background(), "client/thing", map[string]int{"n": 1}, &v)
		results <- res{v.V, err}
	}()
	req := p.recv()
	if req["method"] != "client/thing" || req["id"] == nil {
		t.Fatalf("request %v", req)
	}
	id, _ := json.Marshal(req["id"])
	p.send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"V":42}}`)
	if r := <-results; r.err != nil || r.V != 42 {
		t.Fatalf("call: %+v", r)
	}

	go func() { results <- res{0, p.conn.Call(context.Background(), "client/fails", nil, nil)} }()
	req = p.recv()
	id, _ = json.Marshal(req["id"])
	p.send(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-32002,"message":"gone"}}`)
	var e *Error
	if r := <-results; !errors.As(r.err, &e) || e.Code != CodeNotFound {
		t.Fatalf("error answer: %v", r.err)
	}

	// A call pending when the connection ends fails with ErrClosed.
	go func() { results <- res{0, p.conn.Call(context.Background(), "client/never", nil, nil)} }()
	p.recv()
	_ = p.in.Close()
	select {
	case r := <-results:
		if !errors.Is(r.err, ErrClosed) {
			t.Fatalf("pending call after close: %v", r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a pending call outlived the connection")
	}
	if err := <-p.done; err != nil {
		t.Fatalf("Serve after EOF: %v", err)
	}
}

// TestConnWritesWholeLines: notifications from many goroutines (parallel
// tools) never interleave within a line.
func TestConnWritesWholeLines(t *testing.T) {
	p := newPeer(t, echo)
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = p.conn.Notify("session/update", map[string]any{"i": i, "pad": strings.Repeat("y", 5000)})
		}()
	}
	for range n {
		if m := p.recv(); m["method"] != "session/update" {
			t.Fatalf("got %v", m)
		}
	}
	wg.Wait()
}

// TestSessionUpdateShapes: a chunk's content is one block, a tool call
// update's content a list; both are named "content" on the wire.
func TestSessionUpdateShapes(t *testing.T) {
	tc := ToolCall{ToolCallID: "c1", Status: StatusCompleted, Content: []ToolCallContent{{Type: "content", Content: &ContentBlock{Type: "text", Text: "out"}}}}
	tests := []struct {
		u    SessionUpdate
		want string
	}{
		{SessionUpdate{SessionUpdate: "agent_message_chunk", Content: &ContentBlock{Type: "text", Text: "hi"}},
			`{"content":{"type":"text","text":"hi"},"sessionUpdate":"agent_message_chunk"}`},
		{SessionUpdate{SessionUpdate: "tool_call_update", ToolCall: &tc},
			`{"content":[{"type":"content","content":{"type":"text","text":"out"}}],"sessionUpdate":"tool_call_update","status":"completed","toolCallId":"c1"}`},
		{SessionUpdate{SessionUpdate: "plan"}, `{"entries":[],"sessionUpdate":"plan"}`},
	}
	for _, tc := range tests {
		b, err := json.Marshal(SessionNotification{SessionID: "s", Update: tc.u})
		if err != nil {
			t.Fatal(err)
		}
		var got, want any
		_ = json.Unmarshal(b, &got)
		if err := json.Unmarshal([]byte(`{"sessionId":"s","update":`+tc.want+`}`), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got  %s\nwant %s", b, tc.want)
		}
	}
}
