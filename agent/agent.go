// Package agent is Talaria's public facade: create sessions and run turns on
// them. It owns what surrounds a turn — the session's turn lease (admission,
// refresher, watchdog), panic containment and cleanup on every exit — and
// leaves the turn itself to package turn.
package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/talaria-agent/talaria/internal/setting"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// Config configures an Agent: what an embedder sets. Only Store and Routes
// are required; every other zero value is a default (of the package that
// defines the setting: see turn.Limits, turn.GuardConfig, compact).
//
// The engine's settings are the embedded turn.Config (Routes, Catalogue,
// Approver, Limits, Guards, compression, PromptCache, Observer, Allow, Now,
// Logger), used as they are. Its Store, Tools and Node are the agent's to
// set: Store and Tools below shadow them, and Node is Holder.
type Config struct {
	turn.Config

	// Store keeps sessions, messages, leases and usage. It may provide
	// more, found by type assertion: store.Memories (required when Memory
	// or Review is enabled) and store.ToolLedger (the engine's tool-call
	// ledger, see turn.Config.Ledger).
	Store store.SessionService
	// Tools offered to the model, in this order (with the agent's own
	// delegate and memory tools when those are enabled).
	Tools []tool.Tool

	// RotateOnCompression continues a session in a child session whenever
	// its context is compressed (config compression.rotate): the parent
	// ends with store.EndCompression and keeps its full transcript, the
	// child starts from the compressed one. Off, compression archives the
	// old rows in place.
	RotateOnCompression bool
	// AllowModel, when set, is asked before a subagent starts on a model
	// of its own choosing (the delegate tool's "model"): a server's
	// per-principal allow-list. ctx is the delegating turn's.
	AllowModel func(ctx context.Context, provider, model string) error

	// Workspace is the directory the agent works in (default: the current
	// directory). It is named in the system prompt and stored with sessions.
	Workspace string
	// SystemPrompt replaces the default system prompt; SystemPromptExtra is
	// appended to whichever is used. Either is fixed into a session when it
	// is created, so its bytes never change between turns.
	SystemPrompt      string
	SystemPromptExtra string
	// Holder names this process in turn leases and the tool ledger
	// (default host:pid:random, which lets a process on the same host
	// replace a killed holder at once).
	Holder string
	// LeaseTTL is how long a lease lives without a refresh (default 300s);
	// LeaseRefresh how often the refresher renews it (default 60s).
	LeaseTTL     time.Duration
	LeaseRefresh time.Duration
	// AdmitWait is how long a turn waits for another holder of the
	// session's lease before it gives up with ExitBusy (default 30 min; the
	// CLI uses a few seconds).
	AdmitWait time.Duration
	// Subagents configures the delegate tool, Memory the workspace memory
	// and its tool, Review the background review of a session once it is
	// idle. Each is off unless enabled.
	Subagents SubagentConfig
	Memory    MemoryConfig
	Review    ReviewConfig
}

// Agent runs turns. It is safe for concurrent use; turns of one session
// are serialized by the session's lease, across processes too.
type Agent struct {
	cfg    Config
	mem    store.Memories // cfg.Store's memory; nil when it keeps none
	engine *turn.Engine
	tools  *tool.Registry
	log    *slog.Logger

	// children: the running turns and background reviews per session, so
	// an interrupt reaches every child and a new turn cancels a review.
	kids *registry
	// life ends with Close; background reviews run under it, bg counts them.
	life   context.Context
	stop   context.CancelCauseFunc
	bg     sync.WaitGroup
	bgMu   sync.Mutex
	closed bool
}

// New builds an Agent.
func New(cfg Config) (*Agent, error) {
	if cfg.Store == nil {
		return nil, errors.New("agent: Config.Store is required")
	}
	cfg.Subagents = cfg.Subagents.withDefaults()
	cfg.Memory = cfg.Memory.withDefaults()
	cfg.Review = cfg.Review.withDefaults()
	all := append([]tool.Tool(nil), cfg.Tools...)
	if cfg.Review.Enabled {
		cfg.Memory.Enabled = true // the review writes through the memory tool
	}
	a := &Agent{kids: newRegistry()}
	a.mem, _ = cfg.Store.(store.Memories)
	if cfg.Memory.Enabled && a.mem == nil {
		return nil, fmt.Errorf("agent: memory is enabled but the store (%T) keeps no memory (store.Memories)", cfg.Store)
	}
	a.life, a.stop = context.WithCancelCause(context.Background())
	if cfg.Memory.Enabled {
		all = append(all, &memoryTool{a: a})
	}
	if cfg.Subagents.Enabled {
		all = append(all, &delegateTool{a: a})
	}
	reg, err := tool.NewRegistry(all...)
	if err != nil {
		return nil, fmt.Errorf("agent: tools: %w", err)
	}
	if cfg.Workspace == "" {
		if cfg.Workspace, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("agent: workspace: %w", err)
		}
	}
	if cfg.Workspace, err = filepath.Abs(cfg.Workspace); err != nil {
		return nil, fmt.Errorf("agent: workspace: %w", err)
	}
	if cfg.Holder == "" {
		cfg.Holder = defaultHolder()
	}
	cfg.LeaseTTL = setting.Or(cfg.LeaseTTL, 300*time.Second)
	cfg.LeaseRefresh = setting.Or(cfg.LeaseRefresh, 60*time.Second)
	if cfg.LeaseRefresh >= cfg.LeaseTTL {
		cfg.LeaseRefresh = cfg.LeaseTTL / 3
	}
	cfg.AdmitWait = setting.Or(cfg.AdmitWait, 30*time.Minute)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	// The engine's settings are the embedder's, with the agent's store,
	// tool registry and holder; turn.New applies the defaults, and the
	// agent reads them back from the engine.
	tc := cfg.Config
	tc.Store, tc.Tools, tc.Node = cfg.Store, reg, cfg.Holder
	eng, err := turn.New(tc)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	a.cfg, a.engine, a.tools, a.log = cfg, eng, reg, cfg.Logger
	return a, nil
}

// Store returns the agent's store.
func (a *Agent) Store() store.SessionService { return a.cfg.Store }

// Tools returns the agent's tool registry.
func (a *Agent) Tools() *tool.Registry { return a.tools }

// Workspace returns the absolute workspace directory.
func (a *Agent) Workspace() string { return a.cfg.Workspace }

// Routes returns the agent's routes, primary first.
func (a *Agent) Routes() []turn.Route { return slices.Clone(a.cfg.Routes) }

// SessionOptions describe a new session.
type SessionOptions struct {
	Title string
	// Principal owns the session (the gateway's tenant); "" for the CLI.
	Principal string
	// SystemPromptExtra is appended to this session's system prompt.
	SystemPromptExtra string
}

// NewSession creates a session and fixes its system prompt.
func (a *Agent) NewSession(ctx context.Context, opt SessionOptions) (*store.Session, error) {
	now := a.now()
	primary := a.cfg.Routes[0]
	s := &store.Session{
		ID:        store.NewID(now),
		Title:     opt.Title,
		Provider:  primary.Provider.Name(),
		Model:     primary.Model,
		Cwd:       a.cfg.Workspace,
		Principal: opt.Principal,
		StartedAt: now,
		UpdatedAt: now,
	}
	s.PromptExtra = strings.TrimSpace(opt.SystemPromptExtra)
	mem, err := a.memoryBlock(ctx, opt.Principal)
	if err != nil {
		a.log.Warn("could not read memory for the system prompt", "error", err)
	}
	p := a.prompt(s, mem)
	s.SystemPrompt, s.PromptStamp = p.Text, p.Stamp.String()
	if err := a.cfg.Store.CreateSession(ctx, s); err != nil {
		return nil, fmt.Errorf("create session: %w", err)
	}
	return s, nil
}

// Input is the user's side of one turn.
type Input struct {
	Text   string
	Images []llm.Part // image parts to send with the text
	Hooks  turn.Hooks
	// Unattended turns (gateway, run --yes) let the tool-loop guard stop
	// them; attended ones only get the guard's notices.
	Unattended bool
	// TurnID names the turn (default: a fresh id). The gateway sets it so
	// a client knows the id before the turn starts.
	TurnID string
	// Steer, when set, hands messages to the turn while it runs; the
	// caller closes it after RunTurn returns and runs what it gives back
	// as the next turn (see turn.Steering).
	Steer *turn.Steering
	// Resume continues TurnID, cut off when the process running it died,
	// from its last durable point (turn.Input.Resume): Text is not stored
	// again. Handoff, when set, is the status it reports first.
	Resume  bool
	Handoff *turn.Handoff
	// prefix: see turn.Input.Prefix (background reviews).
	prefix []store.Message
}

// RunTurn runs one turn on a session and returns its result. A session that
// was continued after compression is followed to its live tip. The error is
// non-nil only when no turn could be started at all (unknown session,
// unreadable store); the result then still says why.
func (a *Agent) RunTurn(ctx context.Context, sessionID string, in Input) (res turn.Result, err error) {
	turnID := in.TurnID
	if turnID == "" {
		turnID = newTurnID(a.now())
	}
	res = turn.Result{SessionID: sessionID, TurnID: turnID}
	sess, err := store.ResolveTip(ctx, a.cfg.Store, sessionID)
	if err != nil {
		res.Fail(turn.ExitSessionFailed, &turn.Failure{Message: sessionError(sessionID, err), Detail: err.Error()})
		res.Explanation = res.Failure.Message
		return res, err
	}
	if sess.ID != sessionID {
		a.log.Info("session continues in its compression child", "from", sessionID, "to", sess.ID)
		in.Hooks.Emit(turn.SessionContinued{From: sessionID, To: sess.ID})
	}
	// A background review of this session yields at once: cancelled, not
	// waited for, so it adds no latency to the turn.
	a.kids.cancelReview(sess.ID)
	if in.Resume {
		return a.resumeTurn(ctx, sess, turnID, in)
	}
	msg := userMessage(in)
	if sess.Title == "" {
		if t := titleFrom(in.Text); t != "" {
			if err := a.cfg.Store.SetTitle(ctx, sess.ID, t); err == nil {
				sess.Title = t
			}
		}
	}

	sess, lease, user, early, err := a.admit(ctx, sess, msg, turnID)
	if early != nil {
		return *early, err
	}
	// One iteration budget for the turn and every subagent it runs.
	at := &activeTurn{session: sess, turnID: turnID, tools: a.tools, hooks: in.Hooks, source: sess.ID, principal: sess.Principal,
		budget: turn.NewIterationBudget(a.engine.Config().Limits.MaxIterations)}
	res = a.runAdmitted(ctx, a.engine, sess, lease, turnID, user, in, at)
	a.afterTurn(res)
	return res, nil
}

// runAdmitted runs the turn under its lease; user is the user's message as
// admit stored it with the lease. Whatever happens inside — a normal end,
// an interrupt, a lost lease, a panic — the deferred cleanup stops the
// refresher, waits for it, and releases the lease.
func (a *Agent) runAdmitted(ctx context.Context, eng *turn.Engine, sess *store.Session, lease store.Lease, turnID string, user *store.Message, in Input, at *activeTurn) (res turn.Result) {
	turnCtx, cancel := context.WithCancelCause(ctx)
	// Registered so Interrupt reaches this turn and, through the context
	// its delegate calls derive from, every child it runs.
	unregister := a.kids.addTurn(sess.ID, cancel)
	defer unregister()
	defer func() { res.Subagents = at.subagentTotals() }()
	turnCtx = turnKey.With(turnCtx, at)
	stopped := make(chan struct{})
	refresherDone := make(chan struct{})
	// A rotation moves the lease to the child session (rotate.go).
	tl := &turnLease{l: lease}
	go func() {
		defer close(refresherDone)
		a.refresh(turnCtx, cancel, tl, stopped)
	}()
	defer func() {
		close(stopped)
		<-refresherDone
		cancel(nil)
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if err := a.cfg.Store.ReleaseLease(rctx, tl.get()); err != nil {
			a.log.Warn("could not release the turn lease; it expires by itself", "session", sess.ID, "error", err)
		}
		rcancel()
	}()
	defer func() {
		if p := recover(); p != nil {
			a.log.Error("turn facade panicked", "session", sess.ID, "panic", p, "stack", string(debug.Stack()))
			f := turn.PanicFailure(p)
			res = turn.Result{SessionID: sess.ID, TurnID: turnID, Explanation: f.Message}
			res.Fail(turn.ExitPanic, f)
		}
	}()
	ti := turn.Input{
		Session:    sess,
		Fence:      lease.Fence(),
		TurnID:     turnID,
		Hooks:      in.Hooks,
		Unattended: in.Unattended,
		Prefix:     in.prefix,
		Steer:      in.Steer,
		Budget:     at.budget,
		Prompt:     a.currentPrompt(ctx, sess),
		Resume:     in.Resume,
		Handoff:    in.Handoff,
	}
	if user != nil {
		ti.Message, ti.Stored = user.Message, user
	}
	if a.cfg.RotateOnCompression {
		ti.Rotator = &rotator{a: a, parent: sess, lease: tl}
	}
	return eng.Run(turnCtx, ti)
}

// resumeTurn continues a cut-off turn: it takes the session's lease
// without writing a row (the turn's rows are stored) and runs the engine
// from where they stop.
func (a *Agent) resumeTurn(ctx context.Context, sess *store.Session, turnID string, in Input) (turn.Result, error) {
	sess, lease, err := a.leaseTip(ctx, sess)
	if err != nil {
		res := turn.Result{SessionID: sess.ID, TurnID: turnID}
		f := &turn.Failure{Message: "Could not take the session over to continue the turn: " + err.Error(), Detail: err.Error()}
		var held *store.LeaseHeldError
		if errors.As(err, &held) {
			f.Retryable = true
			res.Fail(turn.ExitBusy, f)
		} else {
			res.Fail(turn.ExitSessionFailed, f)
		}
		res.Explanation = res.Failure.Message
		return res, err
	}
	at := &activeTurn{session: sess, turnID: turnID, tools: a.tools, hooks: in.Hooks, source: sess.ID, principal: sess.Principal,
		budget: turn.NewIterationBudget(a.engine.Config().Limits.MaxIterations)}
	res := a.runAdmitted(ctx, a.engine, sess, lease, turnID, nil, in, at)
	a.afterTurn(res)
	return res, nil
}

func (a *Agent) now() time.Time { return a.engine.Config().Now() }

func userMessage(in Input) llm.Message {
	m := llm.NewText(llm.RoleUser, in.Text)
	m.Content = append(m.Content, in.Images...)
	return m
}

func sessionError(id string, err error) string {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Sprintf("There is no session %q.", id)
	case errors.Is(err, store.ErrEnded):
		return fmt.Sprintf("Session %q has ended and has no live continuation; start a new session.", id)
	}
	return fmt.Sprintf("Could not open session %q: %v", id, err)
}

// NewTurnID returns a fresh turn id, for callers that name a turn before it
// runs (Input.TurnID).
func NewTurnID() string { return newTurnID(time.Now()) }

func newTurnID(now time.Time) string {
	return "t" + now.UTC().Format("150405") + randomHex(3)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
