package gateway_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/gateway"
	"github.com/talaria-agent/talaria/gateway/client"
	"github.com/talaria-agent/talaria/llm/llmtest"
	"github.com/talaria-agent/talaria/store/sqlite"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// The gateway in process: a SQLite store, a scripted model, the HTTP
// service on a test server, and the Go client running a turn over real
// HTTP and server-sent events, as `talaria --remote` does.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "talaria-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "state.db"), sqlite.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	upper, err := tool.FuncOf(tool.Info{Name: "upper", Description: "Upper-cases text.", ReadOnly: true},
		func(ctx context.Context, in struct {
			Text string `json:"text"`
		}) (string, error) {
			return strings.ToUpper(in.Text), nil
		})
	if err != nil {
		log.Fatal(err)
	}
	model := llmtest.New(
		llmtest.Calls(llmtest.ToolCall("upper", `{"text":"hello"}`)),
		llmtest.Text("HELLO"),
	)
	// Every agent the gateway runs is this configuration with the
	// gateway's store, approvals and hooks applied (gateway.AgentSpec).
	g, err := gateway.New(gateway.Config{
		Store: st,
		NewAgent: gateway.Template{Agent: agent.Config{
			Tools:     []tool.Tool{upper},
			Workspace: dir,
			Config:    turn.Config{Routes: []turn.Route{{Provider: model, Model: "scripted"}}},
		}}.NewAgent,
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := g.Start(ctx); err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	defer func() {
		srv.Close()
		_ = g.Shutdown(ctx, time.Second)
	}()

	// A bearer token for one principal (`talaria token create` does this).
	secret, _, err := gateway.CreateToken(ctx, st, "example", "ada", "")
	if err != nil {
		log.Fatal(err)
	}
	c := &client.Client{BaseURL: srv.URL, Token: secret}
	id, err := c.CreateSession(ctx)
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.RunTurn(ctx, id, "Shout hello.", turn.Hooks{Sink: func(u turn.Update) {
		switch u := u.(type) {
		case turn.ToolStarted:
			fmt.Println("tool:", u.Name, u.Arguments)
		case turn.ToolFinished:
			fmt.Println("result:", u.Result)
		}
	}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("answer:", res.FinalText)
	fmt.Println("exit:", res.Exit, "tool calls:", res.ToolCalls)
	// Output:
	// tool: upper {"text":"hello"}
	// result: HELLO
	// answer: HELLO
	// exit: completed tool calls: 1
}
