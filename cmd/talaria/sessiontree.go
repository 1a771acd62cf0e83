package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// childNode is a subagent or review session under the one shown, with its
// own children.
type childNode struct {
	ID       string      `json:"id"`
	Kind     string      `json:"kind"`
	Title    string      `json:"title"`
	Outcome  string      `json:"outcome"` // the child's turn exit, or "running"
	APICalls int64       `json:"api_calls"`
	Usage    llm.Usage   `json:"usage"`
	CostUSD  float64     `json:"cost_usd"`
	Children []childNode `json:"children"`
}

// maxTreeNodes bounds the tree printed for one session.
const maxTreeNodes = 1000

// childTree lists the subagent and review sessions under id, recursively
// (compression continuations are lineage, shown apart).
func childTree(ctx context.Context, st store.Sessions, id string) ([]childNode, error) {
	budget := maxTreeNodes
	seen := map[string]bool{id: true}
	var walk func(id string) ([]childNode, error)
	walk = func(id string) ([]childNode, error) {
		kids, err := st.ChildSessions(ctx, id)
		if err != nil {
			return nil, err
		}
		out := []childNode{}
		for _, k := range kids {
			if k.Kind == "" || seen[k.ID] || budget <= 0 {
				continue
			}
			seen[k.ID] = true
			budget--
			n := childNode{ID: k.ID, Kind: k.Kind, Title: k.Title, Outcome: k.EndReason, APICalls: k.APICalls,
				Usage: k.Usage, CostUSD: k.CostUSD}
			if k.Live() {
				n.Outcome = "running"
			}
			if n.Children, err = walk(k.ID); err != nil {
				return nil, err
			}
			out = append(out, n)
		}
		return out, nil
	}
	return walk(id)
}

// printTree prints children as an indented tree.
func printTree(w io.Writer, nodes []childNode, depth int) {
	for _, n := range nodes {
		fmt.Fprintf(w, "%s└ %s %s [%s] %d API calls", strings.Repeat("  ", depth), n.Kind, n.ID, n.Outcome, n.APICalls)
		if n.CostUSD > 0 {
			fmt.Fprintf(w, " · $%.4f", n.CostUSD)
		}
		if n.Title != "" {
			fmt.Fprintf(w, " · %q", clip(n.Title, 60))
		}
		fmt.Fprintln(w)
		printTree(w, n.Children, depth+1)
	}
}

// printChildren prints the children section of `sessions show`: the
// spend they add and the tree.
func printChildren(w io.Writer, sp agent.SessionSpend, tree []childNode) {
	if len(tree) == 0 {
		return
	}
	if s := spendLines(sp); s != "" {
		fmt.Fprintln(w, strings.TrimPrefix(s, "\n"))
	}
	fmt.Fprintln(w, "children:")
	printTree(w, tree, 1)
}

// latestConversation is the most recently updated session that is a
// conversation, not a subagent or review session (those are updated
// after their parent's turn, so they are often the newest).
func latestConversation(ctx context.Context, st store.Sessions) (string, error) {
	const page = 50
	for off := 0; off < 100*page; off += page {
		list, err := st.ListSessions(ctx, store.ListOptions{Limit: page, Offset: off})
		if err != nil {
			return "", err
		}
		for _, s := range list {
			// A conversation of the user's own with messages: an empty
			// one (a chat opened and left) is nothing to continue.
			if s.Kind == "" && s.MessageCount > 0 {
				return s.ID, nil
			}
		}
		if len(list) < page {
			break
		}
	}
	return "", errors.New("--continue: there is no session yet; run without it to start one")
}
