package fakellm

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	oaoption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// This file drives the server with the official SDKs and reduces what they
// return to one shape, so each case can be checked over both APIs, streamed
// and not.

// mode is one way of calling the server.
type mode struct {
	api    string
	stream bool
}

func (m mode) String() string {
	if m.stream {
		return m.api + "/stream"
	}
	return m.api + "/json"
}

var allModes = []mode{{APIOpenAI, true}, {APIOpenAI, false}, {APIAnthropic, true}, {APIAnthropic, false}}

// result is what a client saw, normalized across APIs.
type result struct {
	text       string
	reasoning  string
	signature  string
	calls      []Call
	finish     string // as the API sent it
	usage      *Usage // nil when none was reported; Input excludes cache
	textDeltas int
	argDeltas  map[int]int // call index -> argument fragments received
}

func newServer(t *testing.T, opts ...Option) *Server {
	t.Helper()
	s := New(opts...)
	t.Cleanup(s.Close)
	return s
}

func openaiClient(s *Server) openai.Client {
	return openai.NewClient(oaoption.WithBaseURL(s.OpenAIBaseURL()), oaoption.WithAPIKey("sk-test"), oaoption.WithMaxRetries(0))
}

func anthropicClient(s *Server) anthropic.Client {
	return anthropic.NewClient(anoption.WithBaseURL(s.AnthropicBaseURL()), anoption.WithAPIKey("sk-ant-test"), anoption.WithMaxRetries(0))
}

// testCtx bounds every call, so a broken server fails the test instead of
// hanging it.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// call sends a one-message conversation offering one tool.
func call(ctx context.Context, s *Server, m mode, model string) (result, error) {
	if m.api == APIOpenAI {
		return callOpenAI(ctx, s, m.stream, openaiParams(model, openai.UserMessage("hello")))
	}
	return callAnthropic(ctx, s, m.stream, anthropicParams(model, anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))))
}

func openaiParams(model string, msgs ...openai.ChatCompletionMessageParamUnion) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    model,
		Messages: append([]openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief")}, msgs...),
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:       "read_file",
			Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}},
		})},
		MaxCompletionTokens: openai.Int(512),
	}
}

func anthropicParams(model string, msgs ...anthropic.MessageParam) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     anthropic.Model(model),
		MaxTokens: 512,
		System:    []anthropic.TextBlockParam{{Text: "be brief"}},
		Messages:  msgs,
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
			Name:        "read_file",
			InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"path": map[string]any{"type": "string"}}},
		}}},
	}
}

func callOpenAI(ctx context.Context, s *Server, stream bool, p openai.ChatCompletionNewParams) (result, error) {
	c := openaiClient(s)
	if !stream {
		resp, err := c.Chat.Completions.New(ctx, p)
		if err != nil {
			return result{}, err
		}
		return openaiCompletion(resp), nil
	}
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	st := c.Chat.Completions.NewStreaming(ctx, p)
	defer st.Close()
	r := result{argDeltas: map[int]int{}}
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		ch := st.Current()
		if !acc.AddChunk(ch) {
			return r, errAccumulate
		}
		if ch.JSON.Usage.Valid() {
			r.usage = openaiUsage(ch.Usage)
		}
		for _, choice := range ch.Choices {
			d := choice.Delta
			if d.Content != "" {
				r.text += d.Content
				r.textDeltas++
			}
			r.reasoning += extraString(d.JSON.ExtraFields["reasoning_content"].Raw())
			for _, tc := range d.ToolCalls {
				i := int(tc.Index)
				for len(r.calls) <= i {
					r.calls = append(r.calls, Call{})
				}
				if tc.ID != "" {
					r.calls[i].ID = tc.ID
				}
				r.calls[i].Name += tc.Function.Name
				if tc.Function.Arguments != "" {
					r.calls[i].Arguments += tc.Function.Arguments
					r.argDeltas[i]++
				}
			}
			if choice.FinishReason != "" {
				r.finish = choice.FinishReason
			}
		}
	}
	if err := st.Err(); err != nil {
		return r, err
	}
	// The SDK's own accumulator must agree with the hand assembly.
	if len(acc.Choices) == 0 || acc.Choices[0].Message.Content != r.text || len(acc.Choices[0].Message.ToolCalls) != len(r.calls) {
		return r, errAccumulate
	}
	for i, tc := range acc.Choices[0].Message.ToolCalls {
		if tc.ID != r.calls[i].ID || tc.Function.Arguments != r.calls[i].Arguments {
			return r, errAccumulate
		}
	}
	return r, nil
}

type accumulateError struct{}

func (accumulateError) Error() string { return "SDK accumulator disagrees with the stream" }

var errAccumulate error = accumulateError{}

func openaiCompletion(resp *openai.ChatCompletion) result {
	r := result{}
	if resp.JSON.Usage.Valid() {
		r.usage = openaiUsage(resp.Usage)
	}
	if len(resp.Choices) == 0 {
		return r
	}
	msg := resp.Choices[0].Message
	r.text = msg.Content
	r.reasoning = extraString(msg.JSON.ExtraFields["reasoning_content"].Raw())
	r.finish = resp.Choices[0].FinishReason
	for _, tc := range msg.ToolCalls {
		r.calls = append(r.calls, Call{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return r
}

func openaiUsage(u openai.CompletionUsage) *Usage {
	cached := u.PromptTokensDetails.CachedTokens
	write := u.PromptTokensDetails.CacheWriteTokens
	return &Usage{
		Input:      u.PromptTokens - cached - write,
		Output:     u.CompletionTokens,
		CacheRead:  cached,
		CacheWrite: write,
		Reasoning:  u.CompletionTokensDetails.ReasoningTokens,
	}
}

func extraString(raw string) string {
	var s string
	if raw == "" || json.Unmarshal([]byte(raw), &s) != nil {
		return ""
	}
	return s
}

func callAnthropic(ctx context.Context, s *Server, stream bool, p anthropic.MessageNewParams) (result, error) {
	c := anthropicClient(s)
	if !stream {
		msg, err := c.Messages.New(ctx, p)
		if err != nil {
			return result{}, err
		}
		return anthropicMessage(msg, msg.JSON.Usage.Valid()), nil
	}
	st := c.Messages.NewStreaming(ctx, p)
	defer st.Close()
	var msg anthropic.Message
	r := result{argDeltas: map[int]int{}}
	rawArgs := map[int]string{} // content block index -> partial_json joined
	usageSeen := false
	for st.Next() {
		ev := st.Current()
		if err := msg.Accumulate(ev); err != nil {
			return r, err
		}
		switch ev.Type {
		case "message_start":
			usageSeen = ev.Message.JSON.Usage.Valid()
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				r.textDeltas++
				r.text += ev.Delta.Text
			case "input_json_delta":
				r.argDeltas[int(ev.Index)]++
				rawArgs[int(ev.Index)] += ev.Delta.PartialJSON
			}
		}
	}
	if err := st.Err(); err != nil {
		return r, err
	}
	out := anthropicMessage(&msg, usageSeen)
	out.textDeltas, out.argDeltas = r.textDeltas, r.argDeltas
	// Argument fragments are counted per content block; renumber them per
	// call so they line up with the OpenAI view.
	calls := map[int]int{}
	n := 0
	for i, b := range msg.Content {
		if b.Type != "tool_use" {
			continue
		}
		calls[n] = r.argDeltas[i]
		// Message.Accumulate empties input that is not JSON, so the raw
		// arguments are the fragments as they came; when they are JSON the
		// SDK's view must agree with them.
		if raw, ok := rawArgs[i]; ok {
			if json.Valid([]byte(raw)) && string(b.Input) != raw {
				return out, errAccumulate
			}
			out.calls[n].Arguments = raw
		}
		n++
	}
	out.argDeltas = calls
	if out.text != r.text {
		return out, errAccumulate
	}
	return out, nil
}

func anthropicMessage(msg *anthropic.Message, usage bool) result {
	r := result{finish: string(msg.StopReason)}
	if usage {
		r.usage = &Usage{
			Input:      msg.Usage.InputTokens,
			Output:     msg.Usage.OutputTokens,
			CacheRead:  msg.Usage.CacheReadInputTokens,
			CacheWrite: msg.Usage.CacheCreationInputTokens,
		}
	}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			r.text += b.Text
		case "thinking":
			r.reasoning += b.Thinking
			r.signature = b.Signature
		case "tool_use":
			r.calls = append(r.calls, Call{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
		}
	}
	return r
}

// post sends body to path with plain net/http and returns the status,
// headers and body of the answer.
func post(t *testing.T, s *Server, path, body string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, s.URL()+path, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: reading body: %v", path, err)
	}
	return resp.StatusCode, resp.Header, b
}
