package agent_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/llm/llmtest"
	"github.com/talaria-agent/talaria/store/sqlite"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// addArgs are the arguments of the example's tool; the schema the model
// sees is derived from them.
type addArgs struct {
	A int `json:"a" desc:"first addend"`
	B int `json:"b" desc:"second addend"`
}

// Embedding the engine: a store, a provider, tools, then turns. The
// provider here is llmtest's scripted model, so the example runs without a
// key; a real one is, e.g., openai.NewChat(openai.Config{APIKey: …}).
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

	add, err := tool.FuncOf(tool.Info{Name: "add", Description: "Adds two integers.", ReadOnly: true},
		func(ctx context.Context, in addArgs) (int, error) { return in.A + in.B, nil })
	if err != nil {
		log.Fatal(err)
	}
	// The model calls the tool, then answers.
	model := llmtest.New(
		llmtest.Calls(llmtest.ToolCall("add", `{"a":2,"b":3}`)),
		llmtest.Text("2 + 3 = 5"),
	)
	ag, err := agent.New(agent.Config{
		Store:     st,
		Tools:     []tool.Tool{add},
		Workspace: dir,
		Config:    turn.Config{Routes: []turn.Route{{Provider: model, Model: "scripted"}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	sess, err := ag.NewSession(ctx, agent.SessionOptions{})
	if err != nil {
		log.Fatal(err)
	}
	res, err := ag.RunTurn(ctx, sess.ID, agent.Input{
		Text: "What is 2 + 3?",
		Hooks: turn.Hooks{Sink: func(u turn.Update) {
			switch u := u.(type) {
			case turn.ToolStarted:
				fmt.Println("tool:", u.Name, u.Arguments)
			case turn.ToolFinished:
				fmt.Println("result:", u.Result)
			}
		}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("answer:", res.FinalText)
	fmt.Println("exit:", res.Exit, "api calls:", res.APICalls, "tool calls:", res.ToolCalls)
	// Output:
	// tool: add {"a":2,"b":3}
	// result: 5
	// answer: 2 + 3 = 5
	// exit: completed api calls: 2 tool calls: 1
}

// A session is durable: a later turn, even from another process on the same
// store, sees the earlier ones. The scripted model's recorded requests show
// what the second call was sent.
func Example_resume() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "talaria-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db := filepath.Join(dir, "state.db")

	// open builds an agent on the store at db, as a new process would.
	open := func(model *llmtest.Provider) (*agent.Agent, func()) {
		st, err := sqlite.Open(ctx, db, sqlite.Options{})
		if err != nil {
			log.Fatal(err)
		}
		ag, err := agent.New(agent.Config{
			Store:     st,
			Workspace: dir,
			Config:    turn.Config{Routes: []turn.Route{{Provider: model, Model: "scripted"}}},
		})
		if err != nil {
			log.Fatal(err)
		}
		return ag, func() { st.Close() }
	}

	first, done := open(llmtest.New(llmtest.Text("Noted: your name is Ada.")))
	sess, err := first.NewSession(ctx, agent.SessionOptions{})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := first.RunTurn(ctx, sess.ID, agent.Input{Text: "My name is Ada."}); err != nil {
		log.Fatal(err)
	}
	done()

	model := llmtest.New(llmtest.Text("Your name is Ada."))
	second, done := open(model)
	defer done()
	res, err := second.RunTurn(ctx, sess.ID, agent.Input{Text: "What is my name?"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("answer:", res.FinalText)
	for _, m := range model.Requests()[0].Messages {
		fmt.Printf("sent %s: %s\n", m.Role, m.Text())
	}
	// Output:
	// answer: Your name is Ada.
	// sent user: My name is Ada.
	// sent assistant: Noted: your name is Ada.
	// sent user: What is my name?
}
