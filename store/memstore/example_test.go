package memstore_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/llm/llmtest"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/memstore"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

type wordArgs struct {
	Text string `json:"text" desc:"the text to count the words of"`
}

// An agent on the in-memory store: no database file, the same turns. The
// transcript is read back through the store like any other.
func Example() {
	ctx := context.Background()
	st := memstore.New()
	defer st.Close()

	words, err := tool.FuncOf(tool.Info{Name: "words", Description: "Counts the words of a text.", ReadOnly: true},
		func(ctx context.Context, in wordArgs) (int, error) { return len(strings.Fields(in.Text)), nil })
	if err != nil {
		log.Fatal(err)
	}
	model := llmtest.New(
		llmtest.Calls(llmtest.ToolCall("words", `{"text":"to be or not to be"}`)),
		llmtest.Text("It has 6 words."),
	)
	var cfg agent.Config
	cfg.Store = st
	cfg.Tools = []tool.Tool{words}
	cfg.Routes = []turn.Route{{Provider: model, Model: "scripted"}}
	cfg.Workspace = os.TempDir()
	ag, err := agent.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer ag.Close()
	sess, err := ag.NewSession(ctx, agent.SessionOptions{Title: "counting"})
	if err != nil {
		log.Fatal(err)
	}
	res, err := ag.RunTurn(ctx, sess.ID, agent.Input{Text: "How many words has 'to be or not to be'?"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("exit:", res.Exit, "answer:", res.FinalText)

	rows, err := st.Messages(ctx, sess.ID, store.MessageQuery{})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range rows {
		fmt.Printf("%d %s %q\n", r.Seq, r.Role, r.Text())
	}
	// Output:
	// exit: completed answer: It has 6 words.
	// 1 user "How many words has 'to be or not to be'?"
	// 2 assistant ""
	// 3 tool "6"
	// 4 assistant "It has 6 words."
}
