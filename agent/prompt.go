package agent

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// prompt builds sess's system prompt from what the agent offers now (its
// tools, instructions, workspace) with the memory block mem, and the stamp
// of those inputs. The date named is the session's start, so the same
// inputs always give the same bytes.
func (a *Agent) prompt(sess *store.Session, mem string) turn.Prompt {
	p := a.systemPrompt(sess.StartedAt, a.tools.Names())
	if sess.PromptExtra != "" {
		p = strings.TrimRight(p, "\n") + "\n\n" + sess.PromptExtra + "\n"
	}
	return turn.Prompt{Text: p + mem, Stamp: turn.PromptStamp{
		Tools:  turn.StampTools(a.tools.Specs()),
		Memory: turn.StampText(mem),
		Instructions: turn.StampText(strings.Join([]string{a.cfg.SystemPrompt, a.cfg.SystemPromptExtra,
			sess.PromptExtra, a.cfg.Workspace}, "\x00")),
	}}
}

// currentPrompt is sess's system prompt as it would be built now, for the
// turn to compare with the stored one (turn.Input.Prompt). Subagent and
// review sessions keep the prompt they were given; nil also when memory
// cannot be read, so a failed read never passes for a change.
func (a *Agent) currentPrompt(ctx context.Context, sess *store.Session) *turn.Prompt {
	if sess.Kind != "" {
		return nil
	}
	mem, err := a.memoryBlock(ctx, sess.Principal)
	if err != nil {
		a.log.Warn("could not read memory; the system prompt is not checked this turn", "session", sess.ID, "error", err)
		return nil
	}
	p := a.prompt(sess, mem)
	return &p
}

// systemPrompt builds the prompt fixed into a new session. It names the
// session's start date (not a ticking clock) so its bytes never change.
func (a *Agent) systemPrompt(now time.Time, tools []string) string {
	p := a.cfg.SystemPrompt
	if p == "" {
		p = defaultPrompt(a.cfg.Workspace, tools, now)
	}
	if extra := strings.TrimSpace(a.cfg.SystemPromptExtra); extra != "" {
		p = strings.TrimRight(p, "\n") + "\n\n" + extra + "\n"
	}
	return p
}

func defaultPrompt(workspace string, tools []string, now time.Time) string {
	var b strings.Builder
	b.WriteString("You are Talaria, an agent that does real work in the user's workspace through tools.\n\n")
	b.WriteString("Workspace: " + workspace + "\n")
	b.WriteString("Session started: " + now.Format("Monday, 2 January 2006") + " (" + now.Format("MST") + ")\n")
	if len(tools) > 0 {
		b.WriteString("Tools: " + strings.Join(tools, ", ") + "\n")
	}
	b.WriteString(`
How to work:
- Look before you change: list_dir, search_files and read_file are read-only and always allowed.
- Paths are relative to the workspace; you cannot read or write outside it.
- Change files with edit_file (an exact, unique replacement: include enough surrounding text) or write_file for whole files.
- Run commands with shell: non-interactive, in the workspace, with a timeout. Keep output short (pipe through head or tail).
- Calls that change things may need the user's approval. If one is refused, do not repeat it unchanged: ask or take another way.
- Do what you say: if you announce a step, take it in the same reply with a tool call.
- When the task is done, reply with a short summary of what you did and anything left. If the request is ambiguous, ask.
`)
	return b.String()
}

// titleFrom makes a session title from the first message: its first line,
// cut at a word boundary.
func titleFrom(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	line = strings.Join(strings.Fields(line), " ")
	const max = 60
	if utf8.RuneCountInString(line) <= max {
		return line
	}
	r := []rune(line)[:max]
	s := string(r)
	if i := strings.LastIndexByte(s, ' '); i > max/2 {
		s = s[:i]
	}
	return s + "…"
}
