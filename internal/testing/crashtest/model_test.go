//go:build unix

package crashtest

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// Prompts the scripted model recognises. Its reply depends only on the
// request, so a turn killed halfway and the one that continues it both get
// a sensible answer whatever the previous process managed to save.
const (
	taskPrompt     = "Set up the two files."
	continuePrompt = "continue please"
	slowPrompt     = "Run the slow job."
	quickPrompt    = "Quick question."
	finalAnswer    = "All done: one.txt and two.txt are written."
	continueAnswer = "Continuing: everything is in place."
)

// stepLatency and chunkDelay make each reply take a little while, so kills
// land inside streams as well as between them.
const (
	stepLatency = 15 * time.Millisecond
	chunkDelay  = 4 * time.Millisecond
)

// model answers by the prompt of the current turn (the last user message)
// and by how many answers it already gave in that turn.
func model(r fakellm.Request) fakellm.Step {
	prompt, round := currentTurn(r.Messages)
	var st fakellm.Step
	switch {
	case strings.Contains(prompt, continuePrompt):
		st = fakellm.Text(continueAnswer)
	case strings.Contains(prompt, taskPrompt):
		st = taskStep(round)
	case strings.Contains(prompt, slowPrompt):
		if round == 0 {
			st = fakellm.Calls(shell(`echo $$ > sh.pid; sleep 30 & echo $! > bg.pid; wait; echo slow`))
		} else {
			st = fakellm.Text("The slow job finished.")
		}
	case strings.Contains(prompt, quickPrompt):
		st = fakellm.Text("Quick answer.")
	default:
		st = fakellm.Text("I am not sure what you mean.")
	}
	return st.WithLatency(stepLatency).WithChunkDelay(chunkDelay)
}

// taskStep is one round of the multi-tool task: shell commands that take
// a little time, file writes and reads, parallel read-only calls, text
// beside calls, then the final answer.
func taskStep(round int) fakellm.Step {
	switch round {
	case 0:
		return fakellm.TextCalls("Let me look around first.",
			shell("sleep 0.03; echo step-one > one.txt; cat one.txt"),
			fakellm.ToolCall("list_dir", `{}`))
	case 1:
		return fakellm.Calls(
			fakellm.ToolCall("write_file", `{"path":"two.txt","content":"step-two\n"}`),
			fakellm.ToolCall("read_file", `{"path":"one.txt"}`),
			fakellm.ToolCall("search_files", `{"pattern":"step"}`))
	case 2:
		return fakellm.TextCalls("Checking the result.",
			shell("sleep 0.03; ls; echo step-three"))
	case 3:
		return fakellm.Calls(
			fakellm.ToolCall("read_file", `{"path":"two.txt"}`),
			fakellm.ToolCall("list_dir", `{}`))
	}
	return fakellm.Text(finalAnswer + " " + strings.Repeat("Every step went as planned. ", 6))
}

func shell(cmd string) fakellm.Call {
	args, _ := json.Marshal(map[string]string{"command": cmd})
	return fakellm.ToolCall("shell", string(args))
}

// currentTurn returns the text of the last user message and the number of
// assistant answers after it.
func currentTurn(msgs []fakellm.Msg) (prompt string, round int) {
	for i := len(msgs) - 1; i >= 0; i-- {
		switch msgs[i].Role {
		case "assistant":
			round++
		case "user":
			return msgs[i].Text, round
		}
	}
	return "", round
}
