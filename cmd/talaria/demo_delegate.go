package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
)

// The delegation demo (talaria demo --delegate): the agent hands two
// independent tasks to subagents in one round — they run in parallel, each
// in its own child session with real tools — then writes low_stock.md from
// their reports.
const delegatePrompt = "Check the stock and the README, then do what notes.txt asks. Use subagents."

const (
	demoTaskStock  = "Read inventory.csv and list every item with fewer than 5 in stock, one per line as 'item: quantity'."
	demoTaskReadme = "Read README.md and say in one sentence what this workspace is for."
)

// delegateDemo answers every request of the delegation demo from what it
// contains, since the two subagents' requests arrive in either order.
func delegateDemo(req fakellm.Request) fakellm.Step {
	if strings.Contains(req.System, "You are a subagent") {
		return demoSubagent(req)
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role == "user" {
		return fakellm.TextCalls("Two independent look-ups: I'll hand them to subagents.",
			demoDelegation(demoTaskStock, "read_file"), demoDelegation(demoTaskReadme, "read_file"))
	}
	// Back from the subagents (two tool results), or from write_file.
	var results []string
	for _, m := range req.Messages {
		if m.Role == "tool" {
			results = append(results, m.Text)
		}
	}
	if len(results) == 2 {
		var b strings.Builder
		b.WriteString("# Low stock (fewer than 5)\n\n")
		for _, l := range strings.Split(results[0], "\n") {
			if strings.Contains(l, ": ") && !strings.HasPrefix(l, "[") {
				b.WriteString("- " + strings.TrimSpace(l) + "\n")
			}
		}
		args, _ := json.Marshal(map[string]string{"path": "low_stock.md", "content": b.String()})
		return fakellm.TextCalls("Both subagents reported; writing low_stock.md.", fakellm.ToolCall("write_file", string(args)))
	}
	return fakellm.Text(fmt.Sprintf("Done. One subagent found the low-stock items, the other summarised the README; "+
		"I wrote the list to low_stock.md (%d tool results informed this answer).", len(results)))
}

func demoDelegation(task string, tools ...string) fakellm.Call {
	b, _ := json.Marshal(map[string]any{"task": task, "toolset": tools})
	return fakellm.ToolCall(agent.DelegateToolName, string(b))
}

// demoSubagent is a subagent: read the file its task names, then report.
func demoSubagent(req fakellm.Request) fakellm.Step {
	task := req.Messages[0].Text
	file := "README.md"
	if strings.Contains(task, "inventory.csv") {
		file = "inventory.csv"
	}
	if req.Messages[len(req.Messages)-1].Role != "tool" {
		return fakellm.Calls(fakellm.ToolCall("read_file", fmt.Sprintf(`{"path":%q}`, file)))
	}
	content := lastToolText(req)
	if file == "README.md" {
		return fakellm.Text("The workspace tracks a shop's inventory; stock levels are in inventory.csv.")
	}
	var low []string
	for _, l := range strings.Split(content, "\n") {
		// read_file numbers its lines ("   3\tnuts,3"); keep the CSV part.
		if i := strings.LastIndex(l, "\t"); i >= 0 {
			l = l[i+1:]
		}
		item, qty, ok := strings.Cut(strings.TrimSpace(l), ",")
		var n int
		if ok && item != "item" {
			if _, err := fmt.Sscanf(qty, "%d", &n); err == nil && n < 5 {
				low = append(low, item+": "+qty)
			}
		}
	}
	return fakellm.Text(strings.Join(low, "\n"))
}
