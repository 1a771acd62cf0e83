package openai

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/talaria-agent/talaria/llm"
)

// FuzzReadSSE feeds arbitrary bytes to the stream reader as a response body
// and checks the closing rule: exactly one terminal item, and it is last;
// every error is an *llm.APIError.
func FuzzReadSSE(f *testing.F) {
	seeds := []string{
		"data: " + textChunk("hi") + "\n\ndata: " + chunk(`{}`, "stop") + "\n\ndata: [DONE]\n\n",
		"data: " + chunk(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{"}}]}`, "") + "\n\n",
		"data: {\"error\":{\"message\":\"x\",\"code\":500}}\n\n",
		"event: error\ndata: {}\n\n",
		": keep-alive\n\ndata: [DONE]\n\n",
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\"1\"}}]}}]}\n\ndata: [DONE]\n\n",
		"data: not json\n\n",
		"",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	p := NewChat(Config{})
	f.Fuzz(func(t *testing.T, body []byte) {
		resp := &http.Response{
			StatusCode: 200,
			Header:     http.Header{"Content-Type": {"text/event-stream"}},
			Body:       io.NopCloser(bytes.NewReader(body)),
		}
		r := &reader{p: &p.conn, model: "m", header: resp.Header}
		terminal := 0
		r.readSSE(context.Background(), resp, func(ev llm.Event, err error) bool {
			if terminal > 0 {
				t.Fatalf("item after the terminal one: %+v %v", ev, err)
			}
			if err != nil {
				if _, ok := err.(*llm.APIError); !ok {
					t.Fatalf("error %T is not *llm.APIError", err)
				}
				terminal++
				return true
			}
			if ev.Type == llm.EventDone {
				if ev.Response == nil || ev.Response.Message.Role != llm.RoleAssistant {
					t.Fatalf("bad final response %+v", ev.Response)
				}
				terminal++
			}
			return true
		})
		if terminal != 1 {
			t.Fatalf("%d terminal items", terminal)
		}
	})
}
