package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/talaria-agent/talaria/internal/setting"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// SubagentConfig configures delegation to child sessions.
type SubagentConfig struct {
	// Enabled offers the delegate tool.
	Enabled bool
	// MaxDepth is how deep children may nest (default 1: a child cannot
	// delegate further).
	MaxDepth int
	// MaxParallel bounds the children one turn runs at once (default 4);
	// further delegate calls of that turn wait for a slot.
	MaxParallel int
	// MaxIterations is a child turn's own iteration budget (default: the
	// parent's).
	MaxIterations int
}

func (c SubagentConfig) withDefaults() SubagentConfig {
	c.MaxDepth = setting.Or(c.MaxDepth, 1)
	c.MaxParallel = setting.Or(c.MaxParallel, 4)
	return c
}

// DelegateToolName is the name of the delegation tool.
const DelegateToolName = "delegate"

// delegateTool runs a task in a child session: a real session
// (ParentID = the calling turn's session, Kind store.SessionSubagent)
// with a full turn of its own — iteration budget, guards, lease — whose
// final answer, or failure, becomes the call's result.
//
// It is marked read-only although the child may change things: the
// delegation itself changes nothing, every tool call the child makes goes
// through the same approver as the parent's would, and read-only is what
// lets several delegations of one round run in parallel.
type delegateTool struct{ a *Agent }

const delegateDescription = `Hand a self-contained task to a subagent: a fresh agent with its own empty context that works with tools on its own and replies with a final report, which you receive as this call's result.
Use it for work that needs many tool calls but whose outcome can be summarised — "find every caller of X and summarise how each uses it", "run the test suite and report the failures with their causes", "read these files and list the public API" — so the details stay out of your context. Several delegate calls in one reply run in parallel: use that for independent subtasks.
Do not use it for a single quick step (call the tool directly) or for anything that needs the user's input. The subagent sees nothing of this conversation: put everything it needs (paths, names, what to return, in what form) in "task" and "context".`

const delegateSchema = `{"type":"object","properties":{` +
	`"task":{"type":"string","description":"What the subagent must do and what its final report must contain."},` +
	`"context":{"type":"string","description":"Facts from this conversation the subagent needs: paths, decisions, constraints."},` +
	`"toolset":{"type":"array","items":{"type":"string"},"description":"Names of the tools the subagent may use: a subset of yours (default: all of yours that a subagent may have)."},` +
	`"model":{"type":"string","description":"A different model for the subagent (default: yours)."}` +
	`},"required":["task"]}`

func (d *delegateTool) Info() tool.Info {
	return tool.Info{Name: DelegateToolName, Description: delegateDescription,
		Parameters: json.RawMessage(delegateSchema), ReadOnly: true}
}

type delegateArgs struct {
	Task    string   `json:"task"`
	Context string   `json:"context"`
	Toolset []string `json:"toolset"`
	Model   string   `json:"model"`
}

func (d *delegateTool) Run(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	var args delegateArgs
	if err := json.Unmarshal(raw, &args); err != nil {
		return tool.Errorf("delegate: %v", err), nil
	}
	if strings.TrimSpace(args.Task) == "" {
		return tool.Errorf("delegate: the task is empty; say what the subagent must do"), nil
	}
	parent := turnKey.From(ctx)
	if parent == nil {
		return tool.Errorf("delegate can only run inside a turn"), nil
	}
	return d.a.delegate(ctx, parent, args, callID(ctx)), nil
}

// Child is the outcome of one delegation, as the Go API returns it.
type Child struct {
	Session *store.Session
	Result  turn.Result
	// Iterations is the iteration budget the child was given; Cut says it
	// is less than its own limit (OwnIterations) because the turn's shared
	// budget had no more left.
	Iterations, OwnIterations int
	Cut                       bool
}

// errRefused marks a delegation refused at creation; no session exists.
var errRefused = errors.New("refused")

// childTools checks a requested toolset against the parent's tools. A
// child never gets a tool its parent lacks, and gets delegate only while
// the depth limit allows; asking for more is refused before anything runs.
func (a *Agent) childTools(parent *activeTurn, want []string) (*tool.Registry, error) {
	mayDelegate := parent.depth+1 < a.cfg.Subagents.MaxDepth
	have := parent.tools.Names()
	if len(want) == 0 {
		for _, n := range have {
			if n != DelegateToolName || mayDelegate {
				want = append(want, n)
			}
		}
	}
	var tools []tool.Tool
	seen := map[string]bool{}
	for _, n := range want {
		if seen[n] {
			continue
		}
		seen[n] = true
		t, ok := parent.tools.Get(n)
		if !ok || !slices.Contains(have, n) {
			return nil, fmt.Errorf("%w: the subagent cannot have the tool %q, which this agent does not have (its tools: %s)",
				errRefused, n, strings.Join(have, ", "))
		}
		if n == DelegateToolName && !mayDelegate {
			return nil, fmt.Errorf("%w: a subagent at depth %d cannot delegate further (subagents.max_depth is %d)",
				errRefused, parent.depth+1, a.cfg.Subagents.MaxDepth)
		}
		tools = append(tools, t)
	}
	return tool.NewRegistry(tools...)
}

// childEngine builds the engine a child runs on: the parent's settings
// (approver, guards, compression) with the child's tools, budget and model.
func (a *Agent) childEngine(tools *tool.Registry, model string, budget *turn.IterationBudget) (*turn.Engine, int, int, error) {
	tc := a.engine.Config()
	tc.Tools = tools
	if a.cfg.Subagents.MaxIterations > 0 {
		tc.Limits.MaxIterations = a.cfg.Subagents.MaxIterations
	}
	// The child draws from its parent turn's budget: it gets its own limit
	// or what is left of the turn's, whichever is less.
	own := tc.Limits.MaxIterations
	if budget != nil {
		left := budget.Remaining()
		if left <= 0 {
			return nil, 0, own, fmt.Errorf("%w: this turn's iteration budget (max_iterations, shared with its subagents) is spent, so no subagent was started; do the rest yourself or sum up", errRefused)
		}
		tc.Limits.MaxIterations = min(own, left)
	}
	if model != "" && model != tc.Routes[0].Model {
		primary := tc.Routes[0]
		primary.Model = model
		tc.Routes = append([]turn.Route{primary}, tc.Routes...)
	}
	eng, err := turn.New(tc)
	return eng, tc.Limits.MaxIterations, own, err
}

// delegate runs one child and turns its outcome into the call's result.
func (a *Agent) delegate(ctx context.Context, parent *activeTurn, args delegateArgs, toolCallID string) tool.Result {
	child, err := a.runChild(ctx, parent, args.Task, args.Context, args.Toolset, args.Model, toolCallID)
	if err != nil {
		if errors.Is(err, errRefused) {
			return tool.Errorf("delegate %s", err)
		}
		return tool.Errorf("delegate: could not start the subagent: %v", err)
	}
	res := childResult(child)
	if child.Cut {
		// The parent is told, so it plans with what is left.
		res.Content += fmt.Sprintf("\n[iteration budget: the subagent got %d iteration(s), not its %d, because that was all this turn had left (max_iterations bounds the turn and its subagents together); %d left now]",
			child.Iterations, child.OwnIterations, parent.budget.Remaining())
	}
	return res
}

// runChild runs a task in a child session of parent's session, under its
// own lease, and books its spend on parent.
func (a *Agent) runChild(ctx context.Context, parent *activeTurn, task, extra string, toolset []string, model, toolCallID string) (Child, error) {
	tools, err := a.childTools(parent, toolset)
	if err != nil {
		return Child{}, err
	}
	// A slot of the parent turn first: a child waiting for one has no
	// session yet. The bound is per turn, so a child that delegates in
	// turn never waits for a slot its own parent holds.
	sem := parent.slots(a.cfg.Subagents.MaxParallel)
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return Child{}, fmt.Errorf("interrupted while waiting for a free subagent slot: %w", context.Cause(ctx))
	}
	defer func() { <-sem }()
	if model != "" && model != a.cfg.Routes[0].Model && a.cfg.AllowModel != nil {
		if err := a.cfg.AllowModel(ctx, a.cfg.Routes[0].Provider.Name(), model); err != nil {
			return Child{}, fmt.Errorf("%w: model %q: %w", errRefused, model, err)
		}
	}
	// After the slot: what siblings used meanwhile is no longer left.
	eng, granted, own, err := a.childEngine(tools, model, parent.budget)
	if err != nil {
		return Child{}, err
	}

	sess, err := a.newChildSession(ctx, parent.session.ID, store.SessionSubagent, titleFrom(task), a.childPrompt(ctx, tools.Names()))
	if err != nil {
		return Child{}, err
	}
	ev := turn.SubagentEvent{ParentSessionID: parent.session.ID, SessionID: sess.ID, Kind: store.SessionSubagent,
		Task: task, ToolCallID: toolCallID}
	parent.hooks.Emit(turn.SubagentStart{Subagent: ev})
	// The parent turn's observer (telemetry) sees the child too; ctx is the
	// delegate call's, so the child's spans nest under that call.
	turn.SubagentStarted(ctx, sess.ID)

	// The child's context is not the parent's: a parent's lost lease must
	// not read as the child's (its own lease is fine), so the child is
	// interrupted instead — registered on the parent's context, and
	// unregistered on every way out.
	childCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { cancel(ErrInterrupted) })
	defer func() {
		stop()
		cancel(nil)
	}()

	text := task
	if c := strings.TrimSpace(extra); c != "" {
		text += "\n\nContext:\n" + c
	}
	in := Input{Text: text, Unattended: true, Hooks: childHooks(parent.hooks, sess.ID)}
	msg := userMessage(in)
	turnID := newTurnID(a.now())
	var res turn.Result
	_, lease, user, early, _ := a.admit(childCtx, sess, msg, turnID)
	if early != nil {
		res = *early
	} else {
		at := &activeTurn{session: sess, turnID: turnID, depth: parent.depth + 1, tools: tools,
			hooks:  subagentHooks(parent.hooks),
			source: sess.ID, principal: parent.principal, budget: parent.budget}
		res = a.runAdmitted(childCtx, eng, sess, lease, turnID, user, in, at)
	}
	dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), leaseReleaseTimeout)
	if err := a.cfg.Store.EndSession(dctx, sess.ID, endReason(res.Exit)); err != nil {
		a.log.Warn("could not end the subagent session", "session", sess.ID, "error", err)
	}
	dcancel()
	parent.addChild(res)
	ev.Exit, ev.Failure, ev.Usage, ev.CostUSD, ev.APICalls = res.Exit, res.Failure, res.Usage, res.CostUSD, res.APICalls
	if s := res.Subagents; s != nil {
		ev.Usage.Add(s.Usage)
		ev.CostUSD += s.CostUSD
		ev.APICalls += s.APICalls
	}
	parent.hooks.Emit(turn.SubagentEnd{Subagent: ev})
	turn.SubagentStopped(ctx, sess.ID, res.Exit)
	return Child{Session: sess, Result: res, Iterations: granted, OwnIterations: own, Cut: granted < own}, nil
}

// newChildSession creates a child session, with a fresh id should two
// children started in the same second draw the same one.
func (a *Agent) newChildSession(ctx context.Context, parentID, kind, title, prompt string) (*store.Session, error) {
	primary := a.cfg.Routes[0]
	var err error
	for try := 0; try < 3; try++ {
		now := a.now()
		s := &store.Session{
			ID: store.NewID(now), Title: title, Provider: primary.Provider.Name(), Model: primary.Model,
			ParentID: parentID, Kind: kind, SystemPrompt: prompt, Cwd: a.cfg.Workspace,
			StartedAt: now, UpdatedAt: now,
		}
		if err = a.cfg.Store.CreateSession(ctx, s); err == nil {
			return s, nil
		}
		if _, gerr := a.cfg.Store.GetSession(ctx, s.ID); gerr != nil {
			break // not an id clash
		}
	}
	return nil, fmt.Errorf("create %s session: %w", kind, err)
}

// childPrompt is a subagent's system prompt: the agent's, naming the
// child's tools, and what a subagent is for.
func (a *Agent) childPrompt(ctx context.Context, tools []string) string {
	p := a.systemPrompt(a.now(), tools)
	p = strings.TrimRight(p, "\n") + "\n\n" + subagentNote + "\n"
	principal := ""
	if at := turnKey.From(ctx); at != nil {
		principal = at.principal
	}
	mem, err := a.memoryBlock(ctx, principal)
	if err != nil {
		a.log.Warn("could not read memory for the system prompt", "error", err)
	}
	return p + mem
}

const subagentNote = `You are a subagent: another agent handed you one task. Nobody will answer questions; work it out with your tools. When done, reply with a final report that stands on its own: what you found or did, with the specific paths, names and results the other agent asked for. If you cannot finish, say exactly what is missing.`

// childResult is the tool result the parent sees for a child's outcome.
func childResult(c Child) tool.Result {
	r := c.Result
	cost := ""
	if r.CostKnown || r.TotalCostUSD() > 0 {
		cost = fmt.Sprintf(", $%.4f", r.TotalCostUSD())
	}
	head := fmt.Sprintf("[subagent %s: %s, %d API calls%s]", c.Session.ID, r.Exit, r.APICalls, cost)
	switch r.Exit {
	case turn.ExitCompleted:
		return tool.Result{Content: head + "\n" + r.FinalText}
	case turn.ExitInterrupted, turn.ExitLeaseLost:
		text := head + "\nThe subagent was interrupted before it finished."
		if r.FinalText != "" {
			text += " What it said before:\n" + r.FinalText
		}
		return tool.Result{Content: text, IsError: true}
	}
	var b strings.Builder
	b.WriteString(head + "\nThe subagent did not finish its task.")
	if f := r.Failure; f != nil {
		fmt.Fprintf(&b, "\nfailure_reason: %s\nfailure_retryable: %t", f.Reason(), f.Retryable)
		if f.Provider != "" {
			fmt.Fprintf(&b, "\nprovider: %s, model: %s", f.Provider, f.Model)
		}
		b.WriteString("\nadvice: " + f.Message)
	} else if r.Explanation != "" {
		b.WriteString("\nadvice: " + r.Explanation)
	}
	if r.FinalText != "" {
		b.WriteString("\nIts last answer:\n" + r.FinalText)
	}
	return tool.Result{Content: b.String(), IsError: true}
}

// childHooks is what a child turn reports to its parent's watcher: its
// status updates, marked as the child's.
func childHooks(parent turn.Hooks, child string) turn.Hooks {
	if parent.Sink == nil && parent.Status == nil {
		return turn.Hooks{}
	}
	return turn.Hooks{Sink: func(u turn.Update) {
		if s, ok := u.(turn.Status); ok {
			parent.Emit(turn.SubagentStatus{SessionID: child, Status: s})
		}
	}}
}

// subagentHooks is the watcher of a child's own children: their start and
// end reach the top turn's watcher, their status does not.
func subagentHooks(parent turn.Hooks) turn.Hooks {
	h := turn.Hooks{SubagentStarted: parent.SubagentStarted, SubagentFinished: parent.SubagentFinished}
	if parent.Sink != nil {
		h.Sink = func(u turn.Update) {
			switch u.(type) {
			case turn.SubagentStart, turn.SubagentEnd:
				parent.Sink(u)
			}
		}
	}
	return h
}

// callID is the id of the tool call a tool runs for, when the engine
// provides it; "" otherwise.
func callID(ctx context.Context) string {
	c, _ := turn.CallFrom(ctx)
	return c.ID
}

// endReason is the end reason of a one-turn child session: its exit.
func endReason(x turn.Exit) string {
	if x == "" {
		return string(turn.ExitFailed)
	}
	return string(x)
}
