package agent_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/llm/openai"
	"github.com/talaria-agent/talaria/store/sqlite"
	"github.com/talaria-agent/talaria/tool/builtin"
	"github.com/talaria-agent/talaria/turn"
)

// Embedding the engine: a store, a provider, tools, then turns.
func Example() {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, "state.db", sqlite.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	tools, err := builtin.New(builtin.Options{Root: "."})
	if err != nil {
		log.Fatal(err)
	}
	ag, err := agent.New(agent.Config{
		Store: st,
		Tools: tools,
		Routes: []turn.Route{{
			Provider: openai.New(openai.Config{APIKey: os.Getenv("OPENAI_API_KEY")}),
			Model:    "gpt-4.1",
			API:      "openai",
		}},
		Limits: turn.Limits{MaxIterations: 20},
	})
	if err != nil {
		log.Fatal(err)
	}
	sess, err := ag.NewSession(ctx, agent.SessionOptions{})
	if err != nil {
		log.Fatal(err)
	}
	res, err := ag.RunTurn(ctx, sess.ID, agent.Input{
		Text:  "What is in this directory?",
		Hooks: turn.Hooks{TextDelta: func(s string) { fmt.Print(s) }},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("\nexit:", res.Exit, "api calls:", res.APICalls)
}
