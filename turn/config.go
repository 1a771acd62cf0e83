package turn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/talaria-agent/talaria/catalogue"
	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/internal/setting"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
)

// Store is what the engine needs from persistence.
type Store interface {
	AppendSpend(ctx context.Context, f store.Fence, sp store.Spend, msgs ...*store.Message) error
	Replace(ctx context.Context, f store.Fence, throughSeq int64, msgs ...*store.Message) error
	Delete(ctx context.Context, f store.Fence, ids ...int64) error
	Messages(ctx context.Context, sessionID string, q store.MessageQuery) ([]store.Message, error)
	AddUsage(ctx context.Context, id string, u llm.Usage, costUSD float64, apiCalls int64) error
	// The one prompt rebuild when a session's capabilities change (prompt.go).
	SetSystemPrompt(ctx context.Context, f store.Fence, from, prompt, stamp string, msgs ...*store.Message) error
	GetSession(ctx context.Context, id string) (*store.Session, error)
}

// Ledger records each tool call before it runs and after its result is
// stored (store.ToolLedger): a turn continued on another node after its own
// died (Input.Resume) never runs a finished call again.
type Ledger interface {
	ToolStarted(ctx context.Context, rec *store.ToolCallRecord) error
	ToolFinished(ctx context.Context, rec *store.ToolCallRecord) error
	ToolCalls(ctx context.Context, sessionID, turnID string) ([]store.ToolCallRecord, error)
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
	// Pool rotates this provider's keys; nil uses the provider's own key.
	Pool *failover.Pool
	// Subscription marks a route whose calls are included in a
	// subscription: they have no per-call price (reported as such, not $0).
	Subscription bool
	// NoKeyHint, when set, says this route sends no API key and how a
	// person gives it one ("set LOCAL_KEY"), so a 401 is explained as a
	// missing key rather than a refused one.
	NoKeyHint string
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
	// EmptyRetries (guard.DefaultEmptyRetries) and EmptyCostThresholdUSD
	// (guard.DefaultEmptyCostThresholdUSD) tune the empty-response guard; NoEmptyRetry allows none (the config's
	// guards.empty_retries: 0), so the first empty answer ends the turn.
	EmptyRetries          int
	NoEmptyRetry          bool
	EmptyCostThresholdUSD float64
}

// Config is everything an Engine needs. Store and Routes are required;
// every other zero value means a default, owned by the package that defines
// the setting (see Limits, GuardConfig, compact.Threshold,
// compact.NewBudget).
type Config struct {
	Store Store
	// Routes: Routes[0] is the primary, the rest the fallback chain.
	Routes []Route
	// Tools offered to the model; nil offers none.
	Tools *tool.Registry
	// Catalogue knows the models' windows, output caps and prices; nil is
	// the built-in one.
	Catalogue *catalogue.Catalogue
	// Approver gates tools that change things; nil approves all.
	Approver Approver

	Limits Limits
	Guards GuardConfig

	// Compressor compresses a conversation that outgrows Threshold
	// (compact.DefaultRatio of the window when zero; a model's own
	// threshold in the catalogue wins), at most CompressAttempts times a
	// turn (compact.DefaultAttempts when zero). nil disables compression.
	Compressor       *compact.Compressor
	Threshold        compact.Threshold
	CompressAttempts int
	// PressureRatio is the share of the window past which a request that
	// compression will not shrink (none configured, or its passes for the
	// turn used up) is warned about once (DefaultPressureRatio when zero;
	// negative turns the warning off).
	PressureRatio float64

	// PromptCache places provider cache breakpoints (Anthropic).
	PromptCache bool
	// Observer watches every turn (telemetry, the recorded event log);
	// nil observes nothing, at no cost. MultiObserver attaches several.
	Observer Observer
	// Allow, when set, is asked before each model call; an error ends the
	// turn ExitSpendLimit (failover.ClassSpendLimit) with the error's text
	// as the explanation, and the call is not made. A server's per-principal
	// spending limit is checked here.
	Allow func(ctx context.Context, c Allowance) error

	// Ledger records tool calls (see Ledger); nil: Store's own when it
	// has one (every backend of this module does), else none.
	Ledger Ledger
	// Node names this process in the ledger (the lease holder).
	Node string

	Now    func() time.Time // nil: time.Now
	Logger *slog.Logger     // nil: discard
}

// Allowance describes the model call Config.Allow is asked about.
type Allowance struct {
	Provider, Model string
	// EstimatedUSD is the call's input priced by the catalogue (0 when the
	// model has no price or the route is a subscription).
	EstimatedUSD float64
}

// Defaults of Limits.
const (
	DefaultMaxIterations       = 40
	DefaultLengthContinuations = 4
	DefaultToolConcurrency     = 8
)

// Limits bound a turn. The zero value is the defaults.
type Limits struct {
	// MaxIterations is how many model answers a turn may use before the
	// last, tool-less call to sum up (DefaultMaxIterations).
	MaxIterations int
	// MaxRetries bounds the retries of one call on one route
	// (failover.DefaultMaxRetries); Backoff spaces them (failover's
	// defaults for unset fields).
	MaxRetries int
	// NoRetries makes a zero MaxRetries mean no retries (max_retries: 0)
	// instead of the default.
	NoRetries bool
	Backoff   failover.Backoff
	// MaxTokens caps each call's output; 0 asks for the model's catalogue
	// maximum within a default cap (see maxTokensFor).
	MaxTokens int
	// LengthContinuations is how many times an answer cut off by the
	// output limit is continued (DefaultLengthContinuations).
	LengthContinuations int
	// ToolConcurrency bounds parallel read-only tool calls
	// (DefaultToolConcurrency).
	ToolConcurrency int
}

func (l Limits) withDefaults() Limits {
	l.MaxIterations = setting.Or(l.MaxIterations, DefaultMaxIterations)
	if l.MaxRetries <= 0 && !l.NoRetries {
		l.MaxRetries = failover.DefaultMaxRetries
	}
	l.LengthContinuations = setting.Or(l.LengthContinuations, DefaultLengthContinuations)
	l.ToolConcurrency = setting.Or(l.ToolConcurrency, DefaultToolConcurrency)
	return l
}

// emptyRetries is the empty-response guard's retry count for
// guard.NewEmptyGuard: none with NoEmptyRetry, else EmptyRetries, else
// (negative) the guard's own default.
func (g GuardConfig) emptyRetries() int {
	switch {
	case g.NoEmptyRetry:
		return 0
	case g.EmptyRetries > 0:
		return g.EmptyRetries
	}
	return -1
}

// New checks cfg and applies the defaults Engine.Config reports.
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
	cfg.Limits = cfg.Limits.withDefaults()
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if l, ok := cfg.Store.(Ledger); ok && cfg.Ledger == nil {
		cfg.Ledger = l
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Engine{cfg: cfg, log: cfg.Logger}, nil
}

// Config returns the engine's configuration with its defaults applied: a
// copy, which may be changed and given to New for a related engine (a
// subagent's, with other tools and limits).
func (e *Engine) Config() Config { return e.cfg }
