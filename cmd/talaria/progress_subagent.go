package main

import (
	"fmt"

	"github.com/talaria-agent/talaria/turn"
)

func (p *progress) subagentStarted(ev turn.SubagentEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endLine()
	fmt.Fprintf(p.w, "  ⇢ subagent %s: %s\n", ev.SessionID, clip(oneLine(ev.Task), 100))
}

func (p *progress) subagentFinished(ev turn.SubagentEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endLine()
	line := fmt.Sprintf("  ⇠ subagent %s: %s · %d API calls", ev.SessionID, ev.Exit, ev.APICalls)
	if ev.CostUSD > 0 {
		line += fmt.Sprintf(" · $%.4f", ev.CostUSD)
	}
	if ev.Failure != nil {
		line += " · " + ev.Failure.Reason()
	}
	fmt.Fprintln(p.w, line)
}
