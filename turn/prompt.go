package turn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// PromptStamp says what a session's system prompt was built from, so a
// later turn can tell that its capabilities changed: each offered tool
// (name → a hash of its description and parameters) and hashes of the
// memory block and of the instructions (the configured prompt, the
// session's own extra, the workspace). Its String form is stored with the
// session (store.Session.PromptStamp).
type PromptStamp struct {
	Tools        map[string]string `json:"tools"`
	Memory       string            `json:"memory"`
	Instructions string            `json:"instructions"`
}

// StampText is the short hash a stamp keeps of a piece of prompt input.
func StampText(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// StampTools hashes each tool as offered to the model.
func StampTools(specs []llm.ToolSpec) map[string]string {
	out := make(map[string]string, len(specs))
	for _, s := range specs {
		out[s.Name] = StampText(s.Description + "\x00" + string(s.Parameters))
	}
	return out
}

// String is the stamp as stored: JSON, map keys sorted, so one set of
// inputs always gives the same bytes.
func (s PromptStamp) String() string {
	if s.Tools == nil {
		s.Tools = map[string]string{}
	}
	b, _ := json.Marshal(s) // strings and a map of strings: cannot fail
	return string(b)
}

// ParsePromptStamp reads a stored stamp back.
func ParsePromptStamp(s string) (PromptStamp, error) {
	var p PromptStamp
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return PromptStamp{}, fmt.Errorf("prompt stamp: %w", err)
	}
	return p, nil
}

// Prompt is the system prompt a session would be given now, with the
// stamp of what it is built from (Input.Prompt).
type Prompt struct {
	Text  string
	Stamp PromptStamp
}

// PromptRebuilt: what the session's system prompt was built from changed
// since it was stored (tools joined or left, memory, instructions), so
// the turn rebuilt it, once, before its first call. The request prefix
// changes at that one point and is stable again from there.
type PromptRebuilt struct {
	ToolsAdded   []string `json:"tools_added,omitempty"`
	ToolsRemoved []string `json:"tools_removed,omitempty"`
	ToolsChanged []string `json:"tools_changed,omitempty"` // same name, new description or schema
	Memory       bool     `json:"memory,omitempty"`
	Instructions bool     `json:"instructions,omitempty"`
}

func (PromptRebuilt) StatusKind() StatusKind { return StatusPromptRebuilt }

// Line says what changed: "capabilities changed (2 tools added: a, b;
// memory changed): system prompt rebuilt once".
func (u PromptRebuilt) Line() string {
	var parts []string
	tools := func(names []string, what string) {
		if len(names) == 0 {
			return
		}
		noun := "tools"
		if len(names) == 1 {
			noun = "tool"
		}
		shown := names
		more := ""
		if len(shown) > 3 {
			shown, more = shown[:3], ", …"
		}
		parts = append(parts, fmt.Sprintf("%d %s %s: %s%s", len(names), noun, what, strings.Join(shown, ", "), more))
	}
	tools(u.ToolsAdded, "added")
	tools(u.ToolsRemoved, "removed")
	tools(u.ToolsChanged, "changed")
	if u.Memory {
		parts = append(parts, "memory changed")
	}
	if u.Instructions {
		parts = append(parts, "instructions changed")
	}
	return "capabilities changed (" + strings.Join(parts, "; ") + "): system prompt rebuilt once"
}

// diffStamps says what changed from old to cur.
func diffStamps(old, cur PromptStamp) PromptRebuilt {
	var u PromptRebuilt
	for _, name := range slices.Sorted(maps.Keys(cur.Tools)) {
		h, ok := old.Tools[name]
		switch {
		case !ok:
			u.ToolsAdded = append(u.ToolsAdded, name)
		case h != cur.Tools[name]:
			u.ToolsChanged = append(u.ToolsChanged, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(old.Tools)) {
		if _, ok := cur.Tools[name]; !ok {
			u.ToolsRemoved = append(u.ToolsRemoved, name)
		}
	}
	u.Memory = old.Memory != cur.Memory
	u.Instructions = old.Instructions != cur.Instructions
	return u
}

// checkPrompt runs once, at the start of the turn (begin): when what the
// session's system prompt was built from changed (Input.Prompt's stamp is
// not the stored one), the prompt is rebuilt — stored with its new stamp
// and a display row saying so, in one fenced compare-and-set — and the
// change is told (PromptRebuilt). Another process that made the same
// rebuild first wins the compare-and-set; this turn then uses what it
// stored and says nothing. With the stamp unchanged nothing happens and
// the prompt bytes stay identical, so the provider's prompt cache holds.
func (e *Engine) checkPrompt(ctx context.Context, st *state) {
	st.promptChecked = true
	p := st.in.Prompt
	sess := st.live.session
	if p == nil || len(st.in.Prefix) > 0 {
		return
	}
	stamp := p.Stamp.String()
	if sess.PromptStamp == stamp {
		return
	}
	dctx, cancel := durable(ctx)
	defer cancel()
	if sess.PromptStamp == "" {
		// A session from before stamps: what its prompt was built from is
		// unknown, so it is taken as the baseline, its bytes unchanged.
		if err := e.cfg.Store.SetSystemPrompt(dctx, st.live.fence, "", sess.SystemPrompt, stamp); err == nil {
			sess.PromptStamp = stamp
		} else if !errors.Is(err, store.ErrStampChanged) {
			e.log.Warn("could not record the system prompt's stamp", "session", sess.ID, "error", err)
		}
		return
	}
	old, err := ParsePromptStamp(sess.PromptStamp)
	if err != nil {
		e.log.Warn("unreadable system prompt stamp; rebuilding", "session", sess.ID, "error", err)
	}
	change := diffStamps(old, p.Stamp)
	row := &store.Message{
		Message:   llm.NewText(llm.RoleAssistant, "C"+strings.TrimPrefix(change.Line(), "c")+"."),
		Kind:      store.RowPromptRebuilt,
		Synthetic: true,
		TurnID:    st.in.TurnID,
		CreatedAt: e.cfg.Now(),
	}
	err = e.cfg.Store.SetSystemPrompt(dctx, st.live.fence, sess.PromptStamp, p.Text, stamp, row)
	switch {
	case errors.Is(err, store.ErrStampChanged):
		// Rebuilt by another process for the same change: use its prompt.
		if fresh, gerr := e.cfg.Store.GetSession(dctx, sess.ID); gerr == nil {
			sess.SystemPrompt, sess.PromptStamp = fresh.SystemPrompt, fresh.PromptStamp
		}
		return
	case err != nil:
		// The stored prompt still holds; a lost lease ends the turn at its
		// next write anyway.
		e.log.Warn("could not rebuild the system prompt; keeping the stored one", "session", sess.ID, "error", err)
		return
	}
	// In place: the agent's rotator continues the session from this value.
	sess.SystemPrompt, sess.PromptStamp = p.Text, stamp
	st.rows = append(st.rows, *row)
	if st.obs != nil {
		e.observe(st, &Event{Kind: EventPromptRebuilt, Prompt: &change})
	}
	st.hooks.emit(change)
}
