package fakellm

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
)

func TestURLs(t *testing.T) {
	s := newServer(t)
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
		t.Errorf("URL = %q, want http://127.0.0.1:PORT", s.URL())
	}
	if s.OpenAIBaseURL() != s.URL()+"/v1" || s.AnthropicBaseURL() != s.URL() {
		t.Errorf("base URLs = %q, %q", s.OpenAIBaseURL(), s.AnthropicBaseURL())
	}
}

func TestQueues(t *testing.T) {
	type req struct{ model, want string }
	cases := []struct {
		name    string
		setup   func(s *Server)
		reqs    []req
		pending int
	}{
		{
			name:  "default queue in order",
			setup: func(s *Server) { s.Script(Text("one"), Text("two")) },
			reqs:  []req{{"a", "one"}, {"b", "two"}},
		},
		{
			name: "model queue first, then default",
			setup: func(s *Server) {
				s.Script(Text("default 1"), Text("default 2"))
				s.ScriptModel("big", Text("big 1"))
			},
			reqs: []req{{"small", "default 1"}, {"big", "big 1"}, {"big", "default 2"}},
		},
		{
			name: "model queue left for later",
			setup: func(s *Server) {
				s.Script(Text("default"))
				s.ScriptModel("fallback", Text("fb 1"), Text("fb 2"))
			},
			reqs:    []req{{"primary", "default"}, {"fallback", "fb 1"}},
			pending: 1,
		},
		{
			name: "SetDefault when queues are empty",
			setup: func(s *Server) {
				s.Script(Text("scripted"))
				s.SetDefault(func(r Request) Step { return Text("default for " + r.Model) })
			},
			reqs: []req{{"m1", "scripted"}, {"m2", "default for m2"}, {"m3", "default for m3"}},
		},
		{
			name: "Respond computes from the request",
			setup: func(s *Server) {
				s.Script(Step{Respond: func(r Request) Step {
					return Text(fmt.Sprintf("%s saw %d messages, last %q", r.Model, len(r.Messages), r.Messages[len(r.Messages)-1].Text))
				}})
			},
			reqs: []req{{"m", `m saw 1 messages, last "hello"`}},
		},
	}
	for _, tc := range cases {
		for _, m := range allModes {
			t.Run(tc.name+"/"+m.String(), func(t *testing.T) {
				s := newServer(t)
				tc.setup(s)
				for i, rq := range tc.reqs {
					r, err := call(testCtx(t), s, m, rq.model)
					if err != nil {
						t.Fatalf("request %d: %v", i, err)
					}
					if r.text != rq.want {
						t.Errorf("request %d (model %s) = %q, want %q", i, rq.model, r.text, rq.want)
					}
				}
				if p := s.Pending(); p != tc.pending {
					t.Errorf("Pending = %d, want %d", p, tc.pending)
				}
			})
		}
	}
}

func TestResetAndPending(t *testing.T) {
	s := newServer(t)
	s.Script(Text("a"), Text("b"))
	s.ScriptModel("x", Text("c"))
	if p := s.Pending(); p != 3 {
		t.Fatalf("Pending = %d, want 3", p)
	}
	if _, err := call(testCtx(t), s, mode{APIOpenAI, false}, "x"); err != nil {
		t.Fatal(err)
	}
	post(t, s, "/v1/messages", `not json`)
	if len(s.Requests()) != 2 || len(s.Violations()) != 1 || s.Pending() != 2 {
		t.Fatalf("before Reset: %d requests, %d violations, %d pending", len(s.Requests()), len(s.Violations()), s.Pending())
	}
	s.Reset()
	if len(s.Requests()) != 0 || len(s.Violations()) != 0 || s.Pending() != 0 {
		t.Errorf("after Reset: %d requests, %d violations, %d pending", len(s.Requests()), len(s.Violations()), s.Pending())
	}
}

func TestWait(t *testing.T) {
	s := newServer(t)
	s.SetDefault(func(Request) Step { return Text("ok") })
	if s.Wait(1, 20*time.Millisecond) {
		t.Fatal("Wait(1) true before any request")
	}
	done := make(chan error, 1)
	ctx := testCtx(t)
	go func() {
		_, err := call(ctx, s, mode{APIAnthropic, true}, "m")
		done <- err
	}()
	if !s.Wait(1, 10*time.Second) {
		t.Fatal("Wait(1) false after a request was sent")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s.Wait(2, 20*time.Millisecond) {
		t.Error("Wait(2) true after one request")
	}
}

func TestConcurrentRequests(t *testing.T) {
	s := newServer(t)
	const n = 8
	for i := 0; i < n; i++ {
		s.Script(Text(fmt.Sprintf("reply %d", i)))
	}
	ctx := testCtx(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[string]bool{}
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r, err := call(ctx, s, allModes[i%len(allModes)], "m")
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			mu.Lock()
			got[r.text] = true
			mu.Unlock()
			_ = s.Requests()
			_ = s.Pending()
		}(i)
	}
	wg.Wait()
	if len(got) != n || len(s.Requests()) != n || s.Pending() != 0 {
		t.Errorf("%d distinct replies, %d requests, %d pending; want %d, %d, 0", len(got), len(s.Requests()), s.Pending(), n, n)
	}
}

// TestRequestsRecorded checks the normalized view of a multi-turn tool
// conversation as each SDK sends it, and that strict validation accepts it.
func TestRequestsRecorded(t *testing.T) {
	wantMsgs := []Msg{
		{Role: "user", Text: "read go.mod"},
		{Role: "assistant", Text: "Reading.", ToolCalls: []Call{{ID: "c1", Name: "read_file", Arguments: `{"path":"go.mod"}`}, {ID: "c2", Name: "read_file", Arguments: `{"path":"go.sum"}`}}},
		{Role: "tool", Text: "module x", ToolCallID: "c1"},
		{Role: "tool", Text: "sums", ToolCallID: "c2"},
	}
	for _, m := range allModes {
		t.Run(m.String(), func(t *testing.T) {
			s := newServer(t)
			s.Script(Text("done"))
			var err error
			if m.api == APIOpenAI {
				asst := openai.ChatCompletionAssistantMessageParam{
					Content: openai.ChatCompletionAssistantMessageParamContentUnion{OfString: openai.String("Reading.")},
					ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{
						{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: "c1", Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "read_file", Arguments: `{"path":"go.mod"}`}}},
						{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: "c2", Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "read_file", Arguments: `{"path":"go.sum"}`}}},
					},
				}
				_, err = callOpenAI(testCtx(t), s, m.stream, openaiParams("gpt-test",
					openai.UserMessage("read go.mod"),
					openai.ChatCompletionMessageParamUnion{OfAssistant: &asst},
					openai.ToolMessage("module x", "c1"),
					openai.ToolMessage("sums", "c2"),
				))
			} else {
				_, err = callAnthropic(testCtx(t), s, m.stream, anthropicParams("claude-test",
					anthropic.NewUserMessage(anthropic.NewTextBlock("read go.mod")),
					anthropic.NewAssistantMessage(
						anthropic.NewTextBlock("Reading."),
						anthropic.NewToolUseBlock("c1", map[string]string{"path": "go.mod"}, "read_file"),
						anthropic.NewToolUseBlock("c2", map[string]string{"path": "go.sum"}, "read_file"),
					),
					anthropic.NewUserMessage(anthropic.NewToolResultBlock("c1", "module x", false), anthropic.NewToolResultBlock("c2", "sums", false)),
				))
			}
			if err != nil {
				t.Fatalf("call: %v (violations %v)", err, s.Violations())
			}
			reqs := s.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests recorded, want 1", len(reqs))
			}
			r := reqs[0]
			// Headers are recorded as sent; the SDKs always send these.
			wantPath, wantModel, header := "/v1/chat/completions", "gpt-test", "Authorization"
			if m.api == APIAnthropic {
				wantPath, wantModel, header = "/v1/messages", "claude-test", "Anthropic-Version"
			}
			if r.API != m.api || r.Path != wantPath || r.Model != wantModel || r.Stream != m.stream {
				t.Errorf("request = %s %s model %q stream %v", r.API, r.Path, r.Model, r.Stream)
			}
			if r.System != "be brief" || r.MaxTokens != 512 || len(r.Tools) != 1 || r.Tools[0] != "read_file" {
				t.Errorf("system %q, max tokens %d, tools %v", r.System, r.MaxTokens, r.Tools)
			}
			if r.Header.Get(header) == "" {
				t.Errorf("header %s missing: %v", header, r.Header)
			}
			if !strings.Contains(string(r.Body), `"read go.mod"`) {
				t.Errorf("raw body lacks the user text: %s", r.Body)
			}
			if m.api == APIOpenAI && m.stream != r.IncludeUsage {
				t.Errorf("IncludeUsage = %v for stream %v", r.IncludeUsage, m.stream)
			}
			checkMsgs(t, r.Messages, wantMsgs)
			if v := s.Violations(); len(v) != 0 {
				t.Errorf("violations: %v", v)
			}
			// Requests returns copies: changing one changes nothing recorded.
			reqs[0].Messages[0].Text = "changed"
			reqs[0].Body[0] = 'X'
			again := s.Requests()[0]
			if again.Messages[0].Text != "read go.mod" || again.Body[0] != '{' {
				t.Error("Requests returned shared memory")
			}
		})
	}
}

func checkMsgs(t *testing.T, got, want []Msg) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("messages = %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Role != w.Role || g.Text != w.Text || g.ToolCallID != w.ToolCallID || len(g.ToolCalls) != len(w.ToolCalls) {
			t.Errorf("message %d = %+v, want %+v", i, g, w)
			continue
		}
		for j := range w.ToolCalls {
			if g.ToolCalls[j] != w.ToolCalls[j] {
				t.Errorf("message %d call %d = %+v, want %+v", i, j, g.ToolCalls[j], w.ToolCalls[j])
			}
		}
	}
}

// TestSDKRoundTrip feeds each SDK's own view of a reply back as history,
// the way an agent loop does, and expects strict validation to accept it.
func TestSDKRoundTrip(t *testing.T) {
	first := Step{Reasoning: "I should read both files.", Text: "Reading.", Calls: []Call{ToolCall("read_file", `{"path":"a"}`), ToolCall("read_file", `{"path":"b"}`)}}
	for _, m := range allModes {
		t.Run(m.String(), func(t *testing.T) {
			s := newServer(t)
			s.Script(first, Text("both read"))
			ctx := testCtx(t)
			if m.api == APIOpenAI {
				c := openaiClient(s)
				p := openaiParams("m", openai.UserMessage("read a and b"))
				resp, err := c.Chat.Completions.New(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				p.Messages = append(p.Messages, resp.Choices[0].Message.ToParam())
				for _, tc := range resp.Choices[0].Message.ToolCalls {
					p.Messages = append(p.Messages, openai.ToolMessage("content of "+tc.Function.Arguments, tc.ID))
				}
				r, err := callOpenAI(ctx, s, m.stream, p)
				if err != nil || r.text != "both read" {
					t.Fatalf("second call = %q, %v (violations %v)", r.text, err, s.Violations())
				}
			} else {
				c := anthropicClient(s)
				p := anthropicParams("m", anthropic.NewUserMessage(anthropic.NewTextBlock("read a and b")))
				msg, err := c.Messages.New(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				var results []anthropic.ContentBlockParamUnion
				for _, b := range msg.Content {
					if b.Type == "tool_use" {
						results = append(results, anthropic.NewToolResultBlock(b.ID, "content", false))
					}
				}
				p.Messages = append(p.Messages, msg.ToParam(), anthropic.NewUserMessage(results...))
				r, err := callAnthropic(ctx, s, m.stream, p)
				if err != nil || r.text != "both read" {
					t.Fatalf("second call = %q, %v (violations %v)", r.text, err, s.Violations())
				}
			}
			reqs := s.Requests()
			last := reqs[len(reqs)-1].Messages
			if len(last) != 4 || last[1].Reasoning == "" && m.api == APIAnthropic {
				t.Errorf("replayed history = %+v", last)
			}
			if v := s.Violations(); len(v) != 0 {
				t.Errorf("violations: %v", v)
			}
		})
	}
}

// gateHandler is a slog handler that holds the goroutine logging msg until
// release is closed, so a test can stop a handler at that line.
type gateHandler struct {
	msg     string
	reached chan struct{}
	release chan struct{}
	once    sync.Once
}

func (h *gateHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *gateHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() { close(h.reached) })
		<-h.release
	}
	return nil
}
func (h *gateHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *gateHandler) WithGroup(string) slog.Handler      { return h }

// A request seen recorded has its step taken already: a test that waits
// for a request and then scripts the next step can never have that step
// taken by the request it waited for (TestInterruptWhileStreaming was
// flaky on that). The handler is held just after the request is recorded.
func TestRecordTakesStep(t *testing.T) {
	gate := &gateHandler{msg: "fakellm: request", reached: make(chan struct{}), release: make(chan struct{})}
	s := newServer(t, WithLogger(slog.New(gate)))
	s.Script(Text("first"))
	ctx := testCtx(t)
	done := make(chan string, 1)
	go func() {
		// Not post: t.Fatal must not run on this goroutine.
		resp, err := http.Post(s.OpenAIBaseURL()+"/chat/completions", "application/json",
			strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			done <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- fmt.Sprintf("%d %s", resp.StatusCode, b)
	}()
	if !s.Wait(1, 10*time.Second) {
		t.Fatal("request never recorded")
	}
	select {
	case <-gate.reached:
	case <-ctx.Done():
		t.Fatal("handler never logged the request")
	}
	// Held between recording and answering: its step must be gone already.
	if n := s.Pending(); n != 0 {
		t.Errorf("recorded request has not taken its step: %d pending", n)
	}
	s.Script(Text("second"))
	close(gate.release)
	if got := <-done; !strings.Contains(got, "first") {
		t.Errorf("the recorded request got %q, want the step scripted before it", got)
	}
	if n := s.Pending(); n != 1 {
		t.Errorf("%d pending, want the second step left", n)
	}
}
