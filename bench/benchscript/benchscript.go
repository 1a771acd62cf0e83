// Package benchscript holds the scripted model replies Talaria's benchmarks
// run against: a trivial-tool turn that measures the engine, and a
// ten-round task with the real built-in tools that measures a whole
// `talaria run`. Both are stateless — each reply is chosen from the
// request alone — so one server can answer any number of turns, in any
// order, with no reset between them.
package benchscript

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// Rounds is the tool rounds of both scripts: with the final answer, a turn
// makes Rounds+1 API calls.
const Rounds = 10

// Round is how many model answers the current turn has had: the assistant
// messages after the newest user message.
func Round(req fakellm.Request) int {
	n := 0
	for _, m := range req.Messages {
		switch m.Role {
		case "user":
			n = 0
		case "assistant":
			n++
		}
	}
	return n
}

// Noop calls the "noop" tool (which the benchmark registers) once per
// round, with a different argument each time so no loop guard fires, and
// then answers.
func Noop(req fakellm.Request) fakellm.Step {
	if k := Round(req); k < Rounds {
		return fakellm.Calls(fakellm.ToolCall("noop", fmt.Sprintf(`{"i":%d}`, k)))
	}
	return fakellm.Text("All rounds done.")
}

// TaskFiles is the workspace Task works in.
var TaskFiles = map[string]string{
	"README.md":     "# Shop inventory\n\nStock levels live in inventory.csv (item,quantity).\n",
	"inventory.csv": "item,quantity\nbolts,120\nnuts,3\nwashers,48\nhinges,2\nscrews,0\nbrackets,17\n",
	"notes.txt":     "TODO: list the items with fewer than 5 in stock in low_stock.md, so we can reorder them.\n",
	"src/stock.go":  "package stock\n\n// TODO: read inventory.csv\nfunc Low() []string { return nil }\n",
}

// WriteTaskWorkspace creates TaskFiles under dir.
func WriteTaskWorkspace(dir string) error {
	for name, body := range TaskFiles {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// taskCalls is one call per round: every built-in tool, three of them
// shell commands (real processes), two of them changing the workspace, so
// a run needs --yes.
var taskCalls = [Rounds]fakellm.Call{
	fakellm.ToolCall("list_dir", `{}`),
	fakellm.ToolCall("read_file", `{"path":"notes.txt"}`),
	fakellm.ToolCall("read_file", `{"path":"inventory.csv"}`),
	fakellm.ToolCall("search_files", `{"pattern":"TODO"}`),
	fakellm.ToolCall("shell", `{"command":"wc -l inventory.csv"}`),
	fakellm.ToolCall("shell", `{"command":"awk -F, 'NR>1 && $2<5 {print \"- \" $1 \": \" $2}' inventory.csv"}`),
	fakellm.ToolCall("write_file", `{"path":"low_stock.md","content":"# Low stock\n\n- nuts: 3\n- hinges: 2\n- screws: 0\n"}`),
	fakellm.ToolCall("read_file", `{"path":"low_stock.md"}`),
	fakellm.ToolCall("edit_file", `{"path":"notes.txt","old_string":"TODO:","new_string":"DONE:"}`),
	fakellm.ToolCall("shell", `{"command":"cat notes.txt low_stock.md"}`),
}

// Task is the ten-round task: each round one real tool call, then the
// answer.
func Task(req fakellm.Request) fakellm.Step {
	if k := Round(req); k < Rounds {
		return fakellm.TextCalls(fmt.Sprintf("Step %d.", k+1), taskCalls[k])
	}
	return fakellm.Text("Done: low_stock.md lists nuts, hinges and screws, and notes.txt is marked DONE.")
}
