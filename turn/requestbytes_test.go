package turn_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/talaria-agent/talaria/bench/benchscript"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/transcript"
)

// historyToRepair is a stored history with every kind of row the request
// path treats specially: images, a tool result without
// its call (dropped by repair), a call without its result (a synthetic
// one is added), an empty interrupted answer, invalid UTF-8 (cleaned),
// unsigned reasoning and markup.
func historyToRepair() []*store.Message {
	call := llm.ToolCall{ID: "h1", Name: "noop", Arguments: `{"i":-1}`}
	asst := llm.NewText(llm.RoleAssistant, "Calling <noop> & waiting.")
	asst.ToolCalls = []llm.ToolCall{call, {ID: "h2", Name: "noop", Arguments: ""}}
	// Unsigned: the scripted server verifies signatures it issued.
	asst.Reasoning = &llm.Reasoning{Text: "thinking \xfe aloud"}
	img := llm.NewText(llm.RoleUser, "look at this \xff picture")
	img.Content = append(img.Content, llm.Part{Type: llm.PartImage, MediaType: "image/png", Data: []byte("\x89PNG fake")})
	rows := []*store.Message{
		{Message: img},
		{Message: asst},
		{Message: llm.NewToolResult(call, "ok ü", false)},
		{Message: llm.NewToolResult(llm.ToolCall{ID: "nobody", Name: "noop"}, "orphan", false)},
		{Message: llm.Message{Role: llm.RoleAssistant}, Kind: store.RowInterrupted},
		{Message: llm.NewText(llm.RoleUser, "and now?")},
		{Message: llm.NewText(llm.RoleAssistant, "Now this.")},
	}
	return rows
}

// Every request of a multi-call turn is, message for message, byte for
// byte, what the whole-history path (transcript.Project, CleanRequest,
// the adapter's full encoder) gives for the rows stored at that call: the
// incremental projection and encoding change no byte, in every wire
// format. The reference is encoded by a second adapter without a wire
// cache, sent to a second scripted server.
func TestRequestBytesMatchTheWholeHistoryPath(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			opts := testenv.Options{API: api, NoBuiltins: true, ExtraTools: []tool.Tool{noopTool()}}
			env := testenv.New(t, opts)
			env.Srv.SetDefault(benchscript.Noop)
			ctx := context.Background()
			prior := historyToRepair()
			if err := env.Store.Append(ctx, store.Fence{SessionID: env.Session.ID}, prior...); err != nil {
				t.Fatal(err)
			}
			if res := env.Run("call noop ten times"); !res.OK() {
				t.Fatalf("turn: %+v", res)
			}
			reqs := env.Srv.Requests()
			rows := env.Rows()
			if len(reqs) != benchscript.Rounds+1 || len(rows) != len(prior)+1+2*benchscript.Rounds+1 {
				t.Fatalf("%d requests, %d rows", len(reqs), len(rows))
			}
			ref := fakellm.New()
			t.Cleanup(ref.Close)
			ref.SetDefault(func(fakellm.Request) fakellm.Step { return fakellm.Text("ref") })
			refProv := testenv.ProviderWith(ref, api, "ref", opts)
			specs := env.Agent.Tools().Specs()
			for i, got := range reqs {
				msgs, _ := transcript.Project(rows[:len(prior)+1+2*i])
				req := &llm.Request{Model: got.Model, System: env.Session.SystemPrompt, Messages: msgs, Tools: specs,
					MaxTokens: got.MaxTokens, PromptCache: env.Config.PromptCache}
				transcript.CleanRequest(req)
				if _, err := llm.Collect(refProv.Stream(ctx, req), nil); err != nil {
					t.Fatal(err)
				}
				want := ref.Requests()[i].Body
				gm, err1 := testenv.MessagesJSON(got.Body)
				wm, err2 := testenv.MessagesJSON(want)
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				if !bytes.Equal(gm, wm) {
					t.Fatalf("call %d: messages differ from the whole-history path\n got  %s\n want %s", i, gm, wm)
				}
				if !bytes.Equal(testenv.FieldJSON(got.Body, "tools"), testenv.FieldJSON(want, "tools")) {
					t.Fatalf("call %d: tools differ", i)
				}
			}
			env.NoViolations()
		})
	}
}
