// Package gateway serves agents over HTTP: a JSON API under /v1, Server-Sent
// Events that stay open across turns and resume with Last-Event-ID, a
// durable per-session message queue, bearer tokens tied to principals, and
// the web page at /. It is a client of package agent: a turn started over
// HTTP is the same agent.RunTurn, with the same lease, guards and finalizer.
//
// The gateway builds its agents with the factory in Config.NewAgent: the
// server's own at New, then one per session workspace, principal sandbox
// and provider/model, cached. Each request is an AgentSpec saying what the
// agent is for and what it must use (the gateway's store, approvals,
// observer and per-principal checks), which AgentSpec.Apply puts into the
// agent's configuration. Template is the common factory: one agent
// configuration, with per-session tools and per-provider routes.
package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/internal/setting"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// Busy modes: what a message for a session whose turn is running does.
const (
	BusyQueue     = "queue"     // wait in the session's queue (default)
	BusyInterrupt = "interrupt" // stop the running turn, then run
	BusyReject    = "reject"    // answer 409
	// BusySteer hands the message to the running turn, which reads it
	// after its current tool round (turn.Steering); one that arrives after
	// the turn's last call runs as the next turn, from the queue.
	BusySteer = "steer"
)

// Store is what the gateway reads and writes: sessions and their
// transcripts (and the leases its agents take), search, its bearer tokens,
// its durable queue and the turns' recorded events, and the workspace
// memory of the agents it runs. Optional capabilities are found by type
// assertion: store.SpendLedger (daily spending limits across restarts),
// store.ToolLedger (handoffs), store.WriteChecker (/readyz). The SQL
// backends' store.Store is one.
type Store interface {
	store.SessionService
	store.Searcher
	store.Tokens
	store.Queue
	store.TurnEvents
	store.Memories
}

// Config configures a Gateway. Store and NewAgent are required.
type Config struct {
	Store Store
	// NewAgent builds the agents the gateway runs turns with: the
	// server's own (the zero spec, built by New: its routes and workspace
	// are the defaults the API shows and the models a principal without
	// an allow-list may use), and one per session workspace, principal
	// sandbox and provider/model, each built once and cached. It must call
	// spec.Apply on the agent's configuration; Template.NewAgent is the
	// common case. An *UnsupportedError refuses the spec with 400
	// not_implemented.
	NewAgent func(spec AgentSpec) (*agent.Agent, error)
	// Observer watches every turn, those that fail before an agent runs
	// them too (telemetry); every agent gets it through AgentSpec.Apply.
	Observer turn.Observer
	// AutoApprove lets tools that change things run without asking
	// (approvals: auto); otherwise each such call waits for an answer over
	// the API, and ApprovalTimeout without one is a refusal.
	AutoApprove     bool
	ApprovalTimeout time.Duration // default 5m
	// Workspaces are the named roots a session may choose besides the
	// server's own ("default"); a client names one, never a path. New
	// checks that NewAgent builds them.
	Workspaces map[string]Workspace

	Busy               string // BusyQueue (default), BusyInterrupt, BusyReject, BusySteer
	QueueLimit         int    // queued messages per session (default 16)
	MaxConcurrentTurns int    // turns running at once (default 64)
	MaxBodyBytes       int64  // request bodies (default 1 MiB)
	// ReadTimeout bounds reading a request that is not an event stream
	// (DefaultReadTimeout); past it the request's context ends.
	ReadTimeout time.Duration
	// SubscriberBuffer is how many events a slow SSE client may fall behind
	// before it is dropped (it resumes with Last-Event-ID); default 1024.
	SubscriberBuffer int
	// RingSize is how many recent events per session are kept in memory
	// for reconnects (default 4096); older ones are rebuilt from rows.
	RingSize int
	// Heartbeat is the SSE keep-alive comment interval (default 15s); an
	// open stream whose token was revoked ends at the next one.
	Heartbeat time.Duration
	// AuthFailures is how many failed authentications a client address
	// may make per minute before it gets 429 (default 10; <0: no limit).
	AuthFailures int
	// Cluster, when set, runs this gateway as one of several nodes on a
	// shared database (see cluster.go): the queue is claimed with the
	// session lease, events go through the database, and a sweep every
	// Sweep takes over queues nobody runs. nil: one node, with its queue
	// worker and events in memory.
	Cluster store.Cluster
	// Holder names this node in the leases of its turns and claims
	// (default on a cluster: agent.HolderName()), LeaseTTL how long they
	// live without a refresh, which is how soon a dead node's sessions are
	// taken over (default on a cluster: 300s). Every agent gets both
	// through AgentSpec.Apply, so that a claim's lease is re-acquired by
	// its turn under the same holder; unset on one node, the agents keep
	// their own.
	Holder   string
	LeaseTTL time.Duration
	// Handoff is what happens to a turn whose node died mid-turn, found by
	// the node that takes its session over (or by this one at its next
	// start): HandoffContinue (default) continues it from its last durable
	// point; HandoffInterrupt marks it interrupted. HandoffMax (default 2)
	// bounds how often one turn is handed off; past it the turn ends
	// turn.ExitHandoffLimit. Limits may set both per principal.
	Handoff    string
	HandoffMax int
	// Sweep is how often a cluster node looks for queued messages nobody
	// runs (default LeaseTTL/10, between 100ms and 1s).
	Sweep time.Duration
	// EventRetention is how long a cluster keeps stored events for
	// resuming streams (default 1h); older resumes get the stored rows.
	EventRetention time.Duration
	// Metrics is what /metrics serves (NewMetrics, or SharedMetrics to
	// share the instruments with an OTLP export); nil: NewMetrics.
	Metrics *Metrics
	// Limits are what each principal may use (limits.go); the zero value
	// is the defaults.
	Limits Limits
	// MaxAgents bounds the cached per-workspace/model agents and
	// MaxIdleSessions the per-session state kept for idle sessions; the
	// least recently used are evicted (defaults 64 and 4096).
	MaxAgents       int
	MaxIdleSessions int
	Logger          *slog.Logger
	// Now is the clock (tests).
	Now func() time.Time

	// unlimited turns the per-principal checks off (the benchmark's
	// baseline).
	unlimited bool
}

// Gateway is the HTTP service. Create it with New, call Start, serve
// Handler, and Shutdown at the end.
type Gateway struct {
	cfg   Config
	store Store
	obs   *observedStore
	hubs  *hubs
	log   *slog.Logger
	m     *Metrics

	// required is what every agent must use (AgentSpec.Apply); routes
	// and home are the server's own agent's routes (primary first) and
	// workspace: the defaults of a session.
	required AgentSpec
	routes   []turn.Route
	home     string

	mu       sync.Mutex
	agents   map[agentKey]*agentEntry
	sessions map[string]*sessionState
	clock    uint64 // use counter for the LRU of agents and sessions
	turns    map[string]*turnRef

	authFail *authFailures
	ready    readiness

	sched   *scheduler
	use     principals
	turnCtx context.Context // parent of every turn; cancelled after the drain
	// resumes are the queued messages whose turns Start found cut off and
	// decided to continue (by queue id); g.mu.
	resumes   map[int64]*turn.Handoff
	stopTurns context.CancelCauseFunc
	stopping  chan struct{} // closed when shutdown begins: no new turns start
	closing   chan struct{} // closed when the turns have ended: SSE streams end
	draining  atomic.Bool
	workers   sync.WaitGroup

	cluster     store.Cluster // nil on a single node
	relay       *relay
	bg          sync.WaitGroup // the cluster's listener, relay and sweep
	stopCluster context.CancelFunc
	stopSweep   func() // stops the sweep and waits for it: no worker starts after
}

type agentKey struct{ workspace, provider, model, sandbox string }

type agentEntry struct {
	a    *agent.Agent
	used uint64
}

// sessionState is the gateway's view of one session.
type sessionState struct {
	mu      sync.Mutex
	id      string
	running *turnRun
	pending int  // queued messages not yet started (this process)
	worker  bool // a worker goroutine owns the queue
	always  map[string]bool
	// ended: queued messages whose turn ended here but whose dequeue
	// failed; they are never run again.
	ended map[int64]bool
	used  uint64 // g.clock at the last use (LRU)
	// principal owns the session ("" until known: read from the store).
	principal string
}

// turnRef locates a turn by id for interrupt and approvals.
type turnRef struct {
	sessionID string
	principal string
	queueID   int64
	text      string
	run       *turnRun  // nil while queued
	queued    time.Time // when it was queued here (a cluster forgets it once another node ran it)
	// unqueue gives back the principal's queued-message count (nil when
	// not counted); called once the message starts or leaves the queue.
	unqueue func()
}

// New builds a Gateway.
func New(cfg Config) (*Gateway, error) {
	if cfg.Store == nil {
		return nil, errors.New("gateway: Config.Store is required")
	}
	if cfg.NewAgent == nil {
		return nil, errors.New("gateway: Config.NewAgent is required")
	}
	switch cfg.Busy {
	case "":
		cfg.Busy = BusyQueue
	case BusyQueue, BusyInterrupt, BusyReject, BusySteer:
	default:
		return nil, fmt.Errorf("gateway: busy mode %q: use queue, interrupt, reject or steer", cfg.Busy)
	}
	cfg.ApprovalTimeout = setting.Or(cfg.ApprovalTimeout, 5*time.Minute)
	cfg.QueueLimit = setting.Or(cfg.QueueLimit, 16)
	cfg.MaxConcurrentTurns = setting.Or(cfg.MaxConcurrentTurns, 64)
	cfg.MaxBodyBytes = setting.Or(cfg.MaxBodyBytes, 1<<20)
	cfg.ReadTimeout = setting.Or(cfg.ReadTimeout, DefaultReadTimeout)
	cfg.MaxAgents = setting.Or(cfg.MaxAgents, 64)
	cfg.MaxIdleSessions = setting.Or(cfg.MaxIdleSessions, 4096)
	cfg.SubscriberBuffer = setting.Or(cfg.SubscriberBuffer, 1024)
	cfg.RingSize = setting.Or(cfg.RingSize, 4096)
	cfg.Heartbeat = setting.Or(cfg.Heartbeat, 15*time.Second)
	if cfg.AuthFailures == 0 {
		cfg.AuthFailures = 10
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Handoff = cmp.Or(cfg.Handoff, HandoffContinue)
	cfg.HandoffMax = setting.Or(cfg.HandoffMax, 2)
	for who, l := range map[string]string{"serve.handoff": cfg.Handoff, "default limits": cfg.Limits.Default.Handoff} {
		if l != "" && l != HandoffContinue && l != HandoffInterrupt {
			return nil, fmt.Errorf("gateway: %s is %q; want %q or %q", who, l, HandoffContinue, HandoffInterrupt)
		}
	}
	for p, l := range cfg.Limits.Principals {
		if l.Handoff != "" && l.Handoff != HandoffContinue && l.Handoff != HandoffInterrupt {
			return nil, fmt.Errorf("gateway: the handoff of principal %s is %q; want %q or %q", p, l.Handoff, HandoffContinue, HandoffInterrupt)
		}
	}
	if cfg.Metrics == nil {
		m, err := NewMetrics()
		if err != nil {
			return nil, err
		}
		cfg.Metrics = m
	}
	if cfg.Cluster != nil {
		// One holder name for every agent of this node: a claim's lease
		// is re-acquired by the turn under the same holder.
		if cfg.Holder == "" {
			cfg.Holder = agent.HolderName()
		}
		cfg.LeaseTTL = setting.Or(cfg.LeaseTTL, 300*time.Second)
		cfg.Sweep = setting.Or(cfg.Sweep, min(max(cfg.LeaseTTL/10, 100*time.Millisecond), time.Second))
		cfg.EventRetention = setting.Or(cfg.EventRetention, time.Hour)
	}
	g := &Gateway{
		cfg:      cfg,
		store:    cfg.Store,
		log:      cfg.Logger,
		m:        cfg.Metrics,
		agents:   map[agentKey]*agentEntry{},
		sessions: map[string]*sessionState{},
		turns:    map[string]*turnRef{},
		authFail: newAuthFailures(cfg.AuthFailures, time.Minute),
		use:      principals{m: map[string]*usage{}},
		closing:  make(chan struct{}),
		stopping: make(chan struct{}),
	}
	g.sched = newScheduler(cfg.MaxConcurrentTurns, func(p string) int { return g.limitFor(p).Turns })
	g.hubs = &hubs{m: map[string]*hub{}, st: cfg.Store, ringSize: cfg.RingSize, max: cfg.MaxIdleSessions, full: g.evictHubs}
	if cfg.Cluster != nil {
		g.cluster = cfg.Cluster
		g.relay = &relay{g: g, pending: map[string]struct{}{}, wake: make(chan struct{}, 1)}
		g.hubs.shared = &sharedStream{cl: cfg.Cluster, log: cfg.Logger, kick: g.relay.kick}
	}
	g.obs = &observedStore{Store: cfg.Store, hubs: g.hubs}
	g.turnCtx, g.stopTurns = context.WithCancelCause(context.Background())
	g.required = AgentSpec{
		store: g.obs,
		// The gateway always records its turns: /metrics is always served.
		observer:   turn.MultiObserver(cfg.Observer, g.m.observer, spendObserver{g}),
		allow:      g.allowance,
		allowModel: g.subagentModel,
		holder:     cfg.Holder,
		leaseTTL:   cfg.LeaseTTL,
	}
	if !cfg.AutoApprove {
		g.required.approver = g
	}
	def, err := g.agent(g.required)
	if err != nil {
		return nil, fmt.Errorf("gateway: the server's agent: %w", err)
	}
	g.routes, g.home = def.Routes(), def.Workspace()
	if len(g.routes) == 0 {
		return nil, errors.New("gateway: the server's agent has no routes")
	}
	if err := g.checkWorkspaces(); err != nil {
		return nil, err
	}
	return g, nil
}

// checkWorkspaces asks NewAgent for one configured workspace, so that a
// factory that builds none fails at start rather than at each session.
func (g *Gateway) checkWorkspaces() error {
	for _, name := range slices.Sorted(maps.Keys(g.cfg.Workspaces)) {
		root := g.cfg.Workspaces[name].Root
		if root == "" || root == g.home {
			continue
		}
		var u *UnsupportedError
		if _, err := g.agent(g.spec(root, SessionSandbox{}, "", "")); errors.As(err, &u) {
			return fmt.Errorf("gateway: Config.Workspaces needs a Config.NewAgent that builds per-session workspaces: %w", err)
		}
		break // one tells: a factory builds workspaces or does not
	}
	return nil
}

// Metrics returns what /metrics serves.
func (g *Gateway) Metrics() *Metrics { return g.m }

// agentFor returns (building once) the agent for a session of principal
// with its workspace and provider/model; empty values mean the server's.
// The principal's sandbox mode is read at every call, so a turn always
// runs with the one configured now.
func (g *Gateway) agentFor(principal, workspace, provider, model string) (*agent.Agent, error) {
	var sandbox SessionSandbox
	if principal != "" {
		l := g.limitFor(principal)
		sandbox = SessionSandbox{Mode: l.Sandbox, Network: l.Network}
	}
	a, err := g.agent(g.spec(workspace, sandbox, provider, model))
	var u *UnsupportedError
	switch {
	case errors.As(err, &u):
		return nil, errf(http.StatusBadRequest, api.CodeNotImplemented, u.Error())
	case err != nil:
		return nil, errf(http.StatusBadRequest, api.CodeBadRequest, err.Error())
	}
	return a, nil
}

// spec is the request for an agent, with the server's own workspace,
// provider and model as "": one cache entry, whichever way a session
// names them.
func (g *Gateway) spec(workspace string, sandbox SessionSandbox, provider, model string) AgentSpec {
	primary := g.routes[0]
	if provider == "" && model != "" {
		provider = primary.Provider.Name()
	}
	if provider == primary.Provider.Name() && (model == primary.Model || model == "") {
		provider, model = "", ""
	}
	if workspace == g.home {
		workspace = ""
	}
	s := g.required
	s.Workspace, s.Sandbox, s.Provider, s.Model = workspace, sandbox, provider, model
	return s
}

// agent returns (building once) the agent for spec. An agent that does
// not write through the gateway's store was built without spec.Apply: its
// turns would reach no stream, approval or limit, so it is refused.
func (g *Gateway) agent(spec AgentSpec) (*agent.Agent, error) {
	key := agentKey{spec.Workspace, spec.Provider, spec.Model, spec.Sandbox.key()}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.clock++
	if e, ok := g.agents[key]; ok {
		e.used = g.clock
		return e.a, nil
	}
	a, err := g.cfg.NewAgent(spec)
	if err != nil {
		return nil, err
	}
	if a.Store() != store.SessionService(g.obs) {
		a.Close()
		return nil, errors.New("Config.NewAgent built an agent without the gateway's store: it must call AgentSpec.Apply on the agent's configuration")
	}
	g.agents[key] = &agentEntry{a: a, used: g.clock}
	g.evictAgents()
	return a, nil
}

// evictAgents drops the least recently used agents beyond MaxAgents (the
// server's own is kept); g.mu held. A running turn keeps its agent; the
// next turn of an evicted session builds it again.
func (g *Gateway) evictAgents() {
	for len(g.agents) > g.cfg.MaxAgents {
		var (
			oldest agentKey
			found  bool
			used   uint64
		)
		for k, e := range g.agents {
			if k != (agentKey{}) && (!found || e.used < used) {
				oldest, used, found = k, e.used, true
			}
		}
		if !found {
			return
		}
		delete(g.agents, oldest)
	}
}

func (g *Gateway) state(sessionID string) *sessionState {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.clock++
	st, ok := g.sessions[sessionID]
	if !ok {
		st = &sessionState{id: sessionID, always: map[string]bool{}, ended: map[int64]bool{}}
		g.sessions[sessionID] = st
		if len(g.sessions) > g.cfg.MaxIdleSessions {
			g.evictSessions()
		}
	}
	st.used = g.clock
	return st
}

// evictSessions forgets the least recently used idle sessions (no turn
// running or queued, no worker, no open stream) until a tenth of
// MaxIdleSessions is free: their state and their hub's ring of recent
// events. A later stream rebuilds its events from the stored rows, as
// after a restart. g.mu held.
func (g *Gateway) evictSessions() {
	type cand struct {
		id   string
		used uint64
	}
	var idle []cand
	for id, st := range g.sessions {
		if !st.mu.TryLock() {
			continue
		}
		busy := st.running != nil || st.pending > 0 || st.worker
		st.mu.Unlock()
		if !busy && !g.hubs.inUse(id) {
			idle = append(idle, cand{id, st.used})
		}
	}
	slices.SortFunc(idle, func(a, b cand) int { return cmp.Compare(a.used, b.used) })
	excess := len(g.sessions) - g.cfg.MaxIdleSessions*9/10
	for _, c := range idle[:min(excess, len(idle))] {
		delete(g.sessions, c.id)
		g.hubs.evict(c.id)
	}
}

// evictHubs forgets the least recently used hubs of sessions without state
// here (no turn, no queue: those go with their state, evictSessions) and
// without a subscriber, until a tenth of the bound is free.
func (g *Gateway) evictHubs() {
	g.mu.Lock()
	defer g.mu.Unlock()
	ids := g.hubs.idle(func(id string) bool { _, ok := g.sessions[id]; return ok })
	excess := g.hubs.size() - g.cfg.MaxIdleSessions*9/10
	for _, id := range ids[:max(0, min(excess, len(ids)))] {
		g.hubs.evict(id)
	}
}
