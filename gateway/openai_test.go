package gateway

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
)

// oaiClient is the official OpenAI Go client pointed at the gateway.
func (h *harness) oaiClient(token string) openai.Client {
	return openai.NewClient(option.WithBaseURL(h.srv.URL+"/v1/"), option.WithAPIKey(token), option.WithMaxRetries(0),
		option.WithRequestTimeout(30*time.Second))
}

func apiErr(t *testing.T, err error) *openai.Error {
	t.Helper()
	var e *openai.Error
	if !errors.As(err, &e) {
		t.Fatalf("want an OpenAI API error, got %v", err)
	}
	return e
}

// TestOpenAIChatCompletions: the official client's non-streamed and
// streamed chat completions run real turns, with usage, on new and named
// sessions; Talaria's own tool calls are not echoed.
func TestOpenAIChatCompletions(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	c := h.oaiClient(h.token)
	ctx := context.Background()

	var hr *http.Response
	comp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "primary/test-model",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("kumquat")},
	}, option.WithResponseInto(&hr))
	if err != nil {
		t.Fatal(err)
	}
	sid := hr.Header.Get(SessionHeader)
	if sid == "" || hr.Header.Get(TurnHeader) == "" {
		t.Fatalf("headers: session %q turn %q", sid, hr.Header.Get(TurnHeader))
	}
	if len(comp.Choices) != 1 || comp.Choices[0].Message.Content != "echo: kumquat" || comp.Choices[0].FinishReason != "stop" {
		t.Fatalf("completion = %s", comp.RawJSON())
	}
	if comp.Usage.PromptTokens <= 0 || comp.Usage.CompletionTokens <= 0 || comp.Usage.TotalTokens != comp.Usage.PromptTokens+comp.Usage.CompletionTokens {
		t.Fatalf("usage = %+v", comp.Usage)
	}
	if comp.Model != "primary/test-model" {
		t.Fatalf("model = %q", comp.Model)
	}
	// The system message became the new session's prompt.
	if reqs := h.env.Srv.Requests(); !strings.Contains(reqs[len(reqs)-1].System, "Be brief.") {
		t.Fatalf("system prompt = %q", reqs[len(reqs)-1].System)
	}

	// The same session, streamed, through a turn with Talaria's own tools.
	toolTurn(h.env.Srv, time.Millisecond)
	stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("kumquat"), openai.AssistantMessage("echo: kumquat"), openai.UserMessage("what is here?")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}, option.WithHeader(SessionHeader, sid), option.WithResponseInto(&hr))
	acc := openai.ChatCompletionAccumulator{}
	chunks := 0
	for stream.Next() {
		acc.AddChunk(stream.Current())
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if hr.Header.Get(SessionHeader) != sid {
		t.Fatalf("streamed in session %q, want %q", hr.Header.Get(SessionHeader), sid)
	}
	got := acc.Choices[0].Message
	if got.Content != "Looking.\n\nThe workspace is empty, and that is the whole answer streamed in pieces." || len(got.ToolCalls) != 0 || chunks < 5 {
		t.Fatalf("streamed %d chunks: content %q tool calls %v", chunks, got.Content, got.ToolCalls)
	}
	if acc.Usage.PromptTokens <= 0 || acc.Usage.CompletionTokens <= 0 {
		t.Fatalf("streamed usage = %+v", acc.Usage)
	}
	// Only the new user message reached the session (it has the rest).
	code, out := h.do("GET", "/v1/sessions/"+sid+"/messages", h.token, nil)
	users := 0
	for _, m := range out["messages"].([]any) {
		if m.(map[string]any)["role"] == "user" {
			users++
		}
	}
	if code != 200 || users != 2 {
		t.Fatalf("session rows = %d %v", code, out)
	}
	h.env.NoViolations()
}

// TestOpenAIResponses: the Responses API, non-streamed and streamed, and
// previous_response_id continuing the session.
func TestOpenAIResponses(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	c := h.oaiClient(h.token)
	ctx := context.Background()
	var hr *http.Response
	resp, err := c.Responses.New(ctx, responses.ResponseNewParams{
		Model:        "test-model",
		Instructions: openai.String("Be brief."),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("kumquat")},
	}, option.WithResponseInto(&hr))
	if err != nil {
		t.Fatal(err)
	}
	sid := hr.Header.Get(SessionHeader)
	if resp.OutputText() != "echo: kumquat" || resp.Status != "completed" || sid == "" {
		t.Fatalf("response = %s", resp.RawJSON())
	}
	if resp.Usage.InputTokens <= 0 || resp.Usage.OutputTokens <= 0 || resp.Usage.TotalTokens != resp.Usage.InputTokens+resp.Usage.OutputTokens {
		t.Fatalf("usage = %+v", resp.Usage)
	}

	stream := c.Responses.NewStreaming(ctx, responses.ResponseNewParams{
		PreviousResponseID: openai.String(resp.ID),
		Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("again")},
	}, option.WithResponseInto(&hr))
	var types []string
	var deltas strings.Builder
	var done responses.Response
	var lastSeq int64 = -1
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		if ev.SequenceNumber != lastSeq+1 {
			t.Fatalf("sequence %d after %d", ev.SequenceNumber, lastSeq)
		}
		lastSeq = ev.SequenceNumber
		switch ev.Type {
		case "response.output_text.delta":
			deltas.WriteString(ev.Delta)
		case "response.completed":
			done = ev.AsResponseCompleted().Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if hr.Header.Get(SessionHeader) != sid {
		t.Fatalf("previous_response_id ran in session %q, want %q", hr.Header.Get(SessionHeader), sid)
	}
	want := "response.created response.in_progress response.output_item.added response.content_part.added response.output_text.delta"
	if j := strings.Join(types, " "); !strings.HasPrefix(j, want) ||
		!strings.HasSuffix(j, "response.output_text.done response.content_part.done response.output_item.done response.completed") {
		t.Fatalf("events = %s", j)
	}
	if deltas.String() != "echo: again" || done.OutputText() != "echo: again" || done.Usage.OutputTokens <= 0 {
		t.Fatalf("streamed %q, completed %s", deltas.String(), done.RawJSON())
	}
	h.env.NoViolations()
}

// TestOpenAIErrors: OpenAI's error shape and status for a wrong token,
// another principal's session, an unknown model, client-side tools and a
// principal's limit; GET /v1/models lists the principal's models.
func TestOpenAIErrors(t *testing.T) {
	h := newHarness(t, harnessOptions{configure: func(c *Config) {
		c.Limits.Principals = map[string]Limit{"bob": {Sessions: 1}}
	}})
	ctx := context.Background()
	user := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}

	alice := h.oaiClient(h.token)
	models, err := alice.Models.List(ctx)
	if err != nil || len(models.Data) != 1 || models.Data[0].ID != "primary/test-model" {
		t.Fatalf("models = %v %v", models, err)
	}

	var hr *http.Response
	if _, err := alice.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Messages: user}, option.WithResponseInto(&hr)); err != nil {
		t.Fatal(err)
	}
	alices := hr.Header.Get(SessionHeader)

	cases := []struct {
		name   string
		token  string
		params openai.ChatCompletionNewParams
		header string
		status int
		code   string
	}{
		{"wrong token", "tal_wrong", openai.ChatCompletionNewParams{Messages: user}, "", 401, "invalid_api_key"},
		{"another principal's session", h.other, openai.ChatCompletionNewParams{Messages: user}, alices, 404, string(api.CodeNotFound)},
		{"unknown model", h.token, openai.ChatCompletionNewParams{Model: "nope/gpt-99", Messages: user}, "", 404, "model_not_found"},
		{"client tools", h.token, openai.ChatCompletionNewParams{Messages: user, Tools: []openai.ChatCompletionToolUnionParam{
			openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "f"})}}, "", 400, "unsupported_parameter"},
		{"no user message", h.token, openai.ChatCompletionNewParams{Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("x")}}, "", 400, ""},
		{"bob's first session", h.other, openai.ChatCompletionNewParams{Messages: user}, "", 200, ""},
		{"bob's session limit", h.other, openai.ChatCompletionNewParams{Messages: user}, "", 429, string(api.CodeLimitReached)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var opts []option.RequestOption
			if tc.header != "" {
				opts = append(opts, option.WithHeader(SessionHeader, tc.header))
			}
			c := h.oaiClient(tc.token)
			_, err := c.Chat.Completions.New(ctx, tc.params, opts...)
			if tc.status == 200 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			e := apiErr(t, err)
			if e.StatusCode != tc.status || e.Code != tc.code || e.Message == "" || e.Type == "" {
				t.Fatalf("error = %d type %q code %q message %q", e.StatusCode, e.Type, e.Code, e.Message)
			}
		})
	}
	// The Responses API answers another principal's response the same way.
	bob := h.oaiClient(h.other)
	_, err = bob.Responses.New(ctx, responses.ResponseNewParams{
		PreviousResponseID: openai.String(responseID(alices, "t000000abcdef")),
		Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
	})
	if e := apiErr(t, err); e.StatusCode != 404 {
		t.Fatalf("bob continuing alice's response = %d %q", e.StatusCode, e.Code)
	}
}

// TestOpenAIStreamClosedInterrupts: a client that closes the stream
// mid-answer interrupts the turn, which is recorded as interrupted.
func TestOpenAIStreamClosedInterrupts(t *testing.T) {
	for _, api := range []string{"chat", "responses"} {
		t.Run(api, func(t *testing.T) {
			h := newHarness(t, harnessOptions{})
			long := strings.Repeat("a long answer that streams slowly ", 40)
			h.env.Srv.Script(fakellm.Text(long).WithChunkDelay(20 * time.Millisecond))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var hr *http.Response
			c := h.oaiClient(h.token)
			got := ""
			if api == "chat" {
				stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("go")}}, option.WithResponseInto(&hr))
				for got == "" && stream.Next() {
					if ch := stream.Current(); len(ch.Choices) > 0 {
						got = ch.Choices[0].Delta.Content
					}
				}
				cancel()
				_ = stream.Close()
			} else {
				stream := c.Responses.NewStreaming(ctx, responses.ResponseNewParams{
					Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("go")}}, option.WithResponseInto(&hr))
				for got == "" && stream.Next() {
					got = stream.Current().Delta
				}
				cancel()
				_ = stream.Close()
			}
			if got == "" {
				t.Fatal("no text before closing")
			}
			sid, tid := hr.Header.Get(SessionHeader), hr.Header.Get(TurnHeader)
			var rows []any
			if !testenv.Eventually(10*time.Second, func() bool {
				_, out := h.do("GET", "/v1/sessions/"+sid+"/messages", h.token, nil)
				rows, _ = out["messages"].([]any)
				for _, m := range rows {
					m := m.(map[string]any)
					if m["turn_id"] == tid && m["kind"] == "interrupted" {
						return true
					}
				}
				return false
			}) {
				t.Fatalf("turn %s not recorded interrupted: %v", tid, rows)
			}
			if !testenv.Eventually(10*time.Second, func() bool {
				_, out := h.do("GET", "/v1/sessions/"+sid, h.token, nil)
				return out["busy"] == false
			}) {
				t.Fatal("the session is still busy after the interrupt")
			}
		})
	}
}
