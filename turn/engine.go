// Package turn runs one turn of a conversation as a phase machine.
//
// A turn is not "while the model returns tool calls". Each iteration passes
// the same phases, one file each: begin.go, prepare.go, assemble.go,
// preflight.go, retryloop.go, normalize.go, then toolround.go or
// finishtext.go. Every phase returns a verdict (verdict.go); the loop below
// is the only place that acts on verdicts, and every way out of it —
// completion, budget, failure, interrupt, lease loss, panic — passes through
// finalize.go. Per-turn mutable state lives in one struct (state.go) created
// at turn start; nothing leaks between turns.
package turn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/talaria-agent/talaria/catalogue"
	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
)

// Store is what the engine needs from persistence.
type Store interface {
	Append(ctx context.Context, f store.Fence, msgs ...*store.Message) error
	Replace(ctx context.Context, f store.Fence, throughSeq int64, msgs ...*store.Message) error
	Delete(ctx context.Context, f store.Fence, ids ...int64) error
	Messages(ctx context.Context, sessionID string, q store.MessageQuery) ([]store.Message, error)
	AddUsage(ctx context.Context, id string, u llm.Usage, costUSD float64, apiCalls int64) error
}

// Approver decides whether a tool that changes things may run. It is asked
// only for tools that are not read-only. A refusal becomes the call's
// result, with reason as its text; the turn goes on.
type Approver interface {
	Approve(ctx context.Context, call llm.ToolCall, info tool.Info) (ok bool, reason string)
}

// Route is one provider+model the turn may use: the primary first, then the
// fallback chain in order.
type Route struct {
	Provider llm.Provider
	Model    string
	// API ("openai" or "anthropic") and BaseURL help the classifier
	// recognise provider-specific error shapes.
	API     string
	BaseURL string
	// Pool rotates this provider's keys; nil uses the provider's own key.
	Pool *failover.Pool
	// Subscription marks a route whose calls are included in a
	// subscription: they have no per-call price (reported as such, not $0).
	Subscription bool
}

// Name is "provider/model", for status lines.
func (r *Route) Name() string { return r.Provider.Name() + "/" + r.Model }

// GuardConfig tunes the guards. Every guard is on unless switched off, so
// the zero GuardConfig is the default: all guards on, default limits.
type GuardConfig struct {
	// NoIdenticalCalls drops the notice appended to the 3rd identical
	// call's result.
	NoIdenticalCalls bool
	// ToolLoopStop ends an unattended turn (Input.Unattended) with
	// ExitToolLoop once a streak reaches this count; 0 never stops. It
	// works whether or not the notice is on.
	ToolLoopStop int
	// NoSaidButStopped drops the nudge for a reply that announces an
	// action it never took.
	NoSaidButStopped bool
	// NoEmptyResponse takes an empty answer as it is, without the
	// empty-response guard's bounded retries and deterministic-empty check.
	NoEmptyResponse bool
	// EmptyRetries (default 3) and EmptyCostThresholdUSD (default 0.25)
	// tune the empty-response guard; NoEmptyRetry allows none (the config's
	// guards.empty_retries: 0), so the first empty answer ends the turn.
	EmptyRetries          int
	NoEmptyRetry          bool
	EmptyCostThresholdUSD float64
}

// Config is everything an Engine needs. Zero values get sensible defaults
// (see New).
type Config struct {
	Store Store
	Tools *tool.Registry
	// Routes: Routes[0] is the primary, the rest the fallback chain.
	Routes    []Route
	Catalogue *catalogue.Catalogue
	// Approver gates tools that change things; nil approves all.
	Approver Approver

	MaxIterations int // model answers per turn before the grace call; default 40
	MaxRetries    int // retries of one call on one route; default 3
	Backoff       failover.Backoff
	MaxTokens     int // output cap per call; 0: the model's catalogue maximum, capped at 8192... (see maxTokensFor)

	Threshold        compact.Threshold
	CompressAttempts int                 // per turn; default 3
	Compressor       *compact.Compressor // nil disables compression

	// LengthContinuations is how many times a truncated answer is continued; default 4.
	LengthContinuations int
	Guards              GuardConfig
	// PromptCache places provider cache breakpoints (Anthropic).
	PromptCache bool
	// ToolConcurrency bounds parallel read-only calls; default 8.
	ToolConcurrency int
	// Observer watches every turn (telemetry, the recorded event log);
	// nil observes nothing, at no cost. MultiObserver attaches several.
	Observer Observer

	Now    func() time.Time
	Logger *slog.Logger
}

// Engine runs turns. It is safe for concurrent use by turns of different
// sessions; the caller (agent) guarantees one turn per session at a time.
type Engine struct {
	cfg Config
	log *slog.Logger
}

// New checks cfg and fills defaults.
func New(cfg Config) (*Engine, error) {
	if cfg.Store == nil {
		return nil, errors.New("turn: Config.Store is required")
	}
	if len(cfg.Routes) == 0 {
		return nil, errors.New("turn: at least one route (provider and model) is required")
	}
	for i, r := range cfg.Routes {
		if r.Provider == nil || r.Model == "" {
			return nil, fmt.Errorf("turn: route %d needs a provider and a model", i)
		}
	}
	if cfg.Tools == nil {
		reg, err := tool.NewRegistry()
		if err != nil {
			return nil, err
		}
		cfg.Tools = reg
	}
	if cfg.Catalogue == nil {
		cfg.Catalogue = catalogue.New(nil)
	}
	if cfg.MaxIterations <= 0 {
		cfg.MaxIterations = 40
	}
	if cfg.MaxRetries <= 0 {
		cfg.MaxRetries = 3
	}
	if cfg.Backoff.Base <= 0 {
		cfg.Backoff = failover.DefaultBackoff()
	}
	if cfg.Threshold == (compact.Threshold{}) {
		cfg.Threshold = compact.Threshold{Ratio: 0.5}
	}
	if cfg.CompressAttempts <= 0 {
		cfg.CompressAttempts = 3
	}
	if cfg.LengthContinuations <= 0 {
		cfg.LengthContinuations = 4
	}
	switch {
	case cfg.Guards.NoEmptyRetry:
		cfg.Guards.EmptyRetries = 0
	case cfg.Guards.EmptyRetries <= 0:
		cfg.Guards.EmptyRetries = 3
	}
	if cfg.Guards.EmptyCostThresholdUSD <= 0 {
		cfg.Guards.EmptyCostThresholdUSD = 0.25
	}
	if cfg.ToolConcurrency <= 0 {
		cfg.ToolConcurrency = 8
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Engine{cfg: cfg, log: log}, nil
}

// Input is one turn to run.
type Input struct {
	Session *store.Session // the live session (its stored system prompt is used verbatim)
	Fence   store.Fence    // the turn lease's write fence
	TurnID  string
	// Message is the user's message (role user).
	Message llm.Message
	Hooks   Hooks
	// Unattended turns (gateway, run --yes) may be stopped by the tool-loop guard.
	Unattended bool
	// Rotator, when set, continues the session in a child session at each
	// compression instead of archiving rows in place (see Rotator).
	Rotator Rotator
	// Prefix holds rows of another session replayed, read-only, before
	// this session's own: a background review sends its parent's stored
	// transcript byte for byte (so the provider's prompt cache hits) and
	// writes only to its own session. Prefix rows are never written,
	// deleted or compressed; an engine given a Prefix should have no
	// Compressor.
	Prefix []store.Message
}

// ErrLeaseLost is the cancellation cause the agent's watchdog uses when the
// session's lease is taken over; the turn then ends ExitLeaseLost.
var ErrLeaseLost = store.ErrLeaseLost

// Run runs one turn and always returns its result. It never panics: a panic
// in a phase or a tool is recovered into ExitPanic, after the finalizer ran.
func (e *Engine) Run(ctx context.Context, in Input) Result {
	st := e.newState(in)
	res := e.run(ctx, st)
	// After the panic recovery in run, with the final result, on every way
	// out of the turn. The copy is made only when observing, so an
	// unobserved turn allocates nothing for it.
	if st.obs != nil {
		r := res
		e.endObserving(st, &r)
	}
	return res
}

// run is Run's body: it recovers a panic into ExitPanic after the finalizer
// ran.
func (e *Engine) run(ctx context.Context, st *state) (res Result) {
	defer func() {
		if p := recover(); p != nil {
			e.log.Error("turn panicked", "session", st.sessionID(), "turn", st.in.TurnID,
				"panic", p, "stack", string(debug.Stack()))
			st.setExit(ExitPanic, PanicFailure(p))
			res = e.finalizeSafely(ctx, st)
		}
	}()
	e.startObserving(ctx, st)
	if v := e.loadHistory(ctx, st); v == finish {
		return e.finalize(ctx, st)
	}
	e.loop(ctx, st)
	return e.finalize(ctx, st)
}

// loop is the iteration loop; it only reads verdicts.
func (e *Engine) loop(ctx context.Context, st *state) {
	for {
		if e.begin(ctx, st) == finish {
			return
		}
		e.prepare(st)
		e.assemble(st)
		switch e.preflight(ctx, st) {
		case restart:
			continue
		case finish:
			return
		}
		resp, v := e.retryLoop(ctx, st)
		switch v {
		case restart:
			continue
		case finish:
			return
		}
		switch e.normalize(ctx, st, resp) {
		case restart, next:
			continue
		case finish:
			return
		}
		if len(resp.Message.ToolCalls) > 0 && !st.res.GraceCall {
			v = e.toolRound(ctx, st, resp)
		} else {
			v = e.finishText(ctx, st, resp)
		}
		if v == finish {
			return
		}
	}
}

// finalizeSafely runs the finalizer after a panic; a second panic there
// still yields a result.
func (e *Engine) finalizeSafely(ctx context.Context, st *state) (res Result) {
	defer func() {
		if p := recover(); p != nil {
			e.log.Error("finalizer panicked", "panic", p, "stack", string(debug.Stack()))
			res = st.res
			res.SessionID = st.sessionID()
			res.Exit = ExitPanic
		}
	}()
	return e.finalize(ctx, st)
}
