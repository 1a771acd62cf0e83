package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/internal/setting"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// Limit is what one principal may use. A zero field takes the default's
// value (Limits.Default, then the built-in default).
type Limit struct {
	// Turns is how many of the principal's turns run at once (default
	// 16, at most MaxConcurrentTurns); more wait their turn without
	// delaying other principals'.
	Turns int
	// Queued is how many messages the principal may have waiting across
	// its sessions (default 256).
	Queued int
	// Sessions is how many sessions the principal may have (default 10000).
	Sessions int
	// Streams is how many event streams it may hold open (default 64).
	Streams int
	// RequestsPerSecond and Burst bound its API requests (default 50/s,
	// burst 2×).
	RequestsPerSecond float64
	Burst             int
	// Searches is how many searches it may run at once (default 2).
	Searches int
	// SpendUSDPerDay stops a turn before a model call once the principal's
	// spend this UTC day (as priced by the catalogue) plus the call's
	// estimated input cost would pass it; 0: no limit.
	SpendUSDPerDay float64
	// Models are "provider/model" patterns (path.Match: "custom/*") the
	// principal may choose for a session; nil: the configured routes only.
	Models []string
	// Sandbox is the sandbox mode its sessions' tools run in, handed to
	// Config.Tools, which never makes it wider than the server's; empty:
	// the server's.
	Sandbox string
	// Network narrows the network of its sessions' commands: nil keeps
	// the server's; an empty list turns it off; hosts allow only those
	// (each one the server allows too; Config.Tools checks).
	Network []string
	// Handoff is what happens to its turns when their node dies:
	// HandoffContinue or HandoffInterrupt; empty: the server's
	// (Config.Handoff). HandoffMax bounds how often one turn is handed
	// off; 0: the server's.
	Handoff    string
	HandoffMax int
}

// SessionSandbox is how a principal narrows the server's sandbox for its
// sessions (Limit.Sandbox and Limit.Network); the zero value is the
// server's own.
type SessionSandbox struct {
	Mode    string
	Network []string
}

// servers reports whether s changes nothing.
func (s SessionSandbox) servers() bool { return s.Mode == "" && s.Network == nil }

// key is s as a comparable part of the agent cache's key.
func (s SessionSandbox) key() string {
	if s.Network == nil {
		return s.Mode
	}
	return s.Mode + "\x00" + strings.Join(s.Network, "\n")
}

// Limits are the per-principal limits: Default for every principal,
// Principals[name] overriding it field by field.
type Limits struct {
	Default    Limit
	Principals map[string]Limit
}

// limitFor merges the principal's limits over the defaults.
func (g *Gateway) limitFor(principal string) Limit {
	l := g.cfg.Limits.Default
	if p, ok := g.cfg.Limits.Principals[principal]; ok {
		l.Turns = setting.Or(p.Turns, l.Turns)
		l.Queued = setting.Or(p.Queued, l.Queued)
		l.Sessions = setting.Or(p.Sessions, l.Sessions)
		l.Streams = setting.Or(p.Streams, l.Streams)
		l.RequestsPerSecond = setting.Or(p.RequestsPerSecond, l.RequestsPerSecond)
		l.Burst = setting.Or(p.Burst, l.Burst)
		l.Searches = setting.Or(p.Searches, l.Searches)
		l.SpendUSDPerDay = setting.Or(p.SpendUSDPerDay, l.SpendUSDPerDay)
		if p.Models != nil {
			l.Models = p.Models
		}
		l.Sandbox = cmp.Or(p.Sandbox, l.Sandbox)
		if p.Network != nil {
			l.Network = p.Network
		}
		l.Handoff = cmp.Or(p.Handoff, l.Handoff)
		l.HandoffMax = setting.Or(p.HandoffMax, l.HandoffMax)
	}
	l.Turns = min(setting.Or(l.Turns, 16), g.cfg.MaxConcurrentTurns)
	l.Queued = setting.Or(l.Queued, 256)
	l.Sessions = setting.Or(l.Sessions, 10000)
	l.Streams = setting.Or(l.Streams, 64)
	l.RequestsPerSecond = setting.Or(l.RequestsPerSecond, 50)
	l.Burst = setting.Or(l.Burst, int(math.Ceil(2*l.RequestsPerSecond)))
	l.Searches = setting.Or(l.Searches, 2)
	return l
}

// usage is what one principal uses now (this process).
type usage struct {
	queued   int
	streams  int
	searches int
	// sessions counts the principal's stored sessions once read
	// (sessionsKnown), then follows creates and deletes.
	sessions      int
	sessionsKnown bool
	// tokens is the request bucket, refilled at RequestsPerSecond.
	tokens float64
	filled time.Time
	// spent is the priced spend of day (UTC "2006-01-02").
	day   string
	spent float64
}

// principals holds every principal's usage.
type principals struct {
	mu sync.Mutex
	m  map[string]*usage
}

func (p *principals) get(name string) *usage { return entry(p.m, name) }

// entry returns m[k], first adding a zero value when k has none: the
// per-principal tables start every principal at nothing used.
func entry[K comparable, V any](m map[K]*V, k K) *V {
	v, ok := m[k]
	if !ok {
		v = new(V)
		m[k] = v
	}
	return v
}

// allowRequest takes one request from the principal's bucket; false with
// the wait until the next one otherwise.
func (g *Gateway) allowRequest(principal string) (bool, time.Duration) {
	if g.cfg.unlimited {
		return true, 0
	}
	l := g.limitFor(principal)
	now := g.cfg.Now()
	g.use.mu.Lock()
	defer g.use.mu.Unlock()
	u := g.use.get(principal)
	if u.filled.IsZero() {
		u.tokens = float64(l.Burst)
	} else {
		u.tokens = min(float64(l.Burst), u.tokens+now.Sub(u.filled).Seconds()*l.RequestsPerSecond)
	}
	u.filled = now
	if u.tokens >= 1 {
		u.tokens--
		return true, 0
	}
	return false, time.Duration((1 - u.tokens) / l.RequestsPerSecond * float64(time.Second))
}

// rateLimited wraps an authenticated route with the principal's request
// rate.
func (g *Gateway) rateLimited(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p := principalOf(r.Context())
		ok, wait := g.allowRequest(p)
		if !ok {
			g.m.principalRequest(p, "limited")
			w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
			writeError(w, errf(http.StatusTooManyRequests, api.CodeRateLimited, "too many requests for this principal; slow down"))
			return
		}
		g.m.principalRequest(p, "ok")
		next(w, r)
	}
}

// hold takes one unit of a counted resource (streams, searches, queued
// messages) for principal, or says which limit refused it. release gives
// it back.
func (g *Gateway) hold(principal string, what string) (release func(), err error) {
	if g.cfg.unlimited {
		return func() {}, nil
	}
	l := g.limitFor(principal)
	g.use.mu.Lock()
	defer g.use.mu.Unlock()
	u := g.use.get(principal)
	var n *int
	var limit int
	switch what {
	case "streams":
		n, limit = &u.streams, l.Streams
	case "searches":
		n, limit = &u.searches, l.Searches
	case "queued":
		n, limit = &u.queued, l.Queued
	default:
		panic("gateway: unknown limit " + what)
	}
	if *n >= limit {
		return nil, errf(http.StatusTooManyRequests, api.CodeLimitReached, fmt.Sprintf("this principal already has %d %s (its limit)", *n, what))
	}
	*n++
	g.m.principalUsage(principal, what, 1)
	var once sync.Once
	return func() {
		once.Do(func() {
			g.use.mu.Lock()
			*n--
			g.use.mu.Unlock()
			g.m.principalUsage(principal, what, -1)
		})
	}, nil
}

// sessionAdded checks the principal's session count before a new session
// is created (count read from the store once, then followed) and counts
// it; the caller undoes it with sessionRemoved when the create fails.
func (g *Gateway) sessionAdded(ctx context.Context, principal string) error {
	if g.cfg.unlimited {
		return nil
	}
	l := g.limitFor(principal)
	g.use.mu.Lock()
	known := g.use.get(principal).sessionsKnown
	g.use.mu.Unlock()
	if !known {
		n, err := g.countSessions(ctx, principal, l.Sessions+1)
		if err != nil {
			return err
		}
		g.use.mu.Lock()
		if u := g.use.get(principal); !u.sessionsKnown {
			u.sessions, u.sessionsKnown = n, true
			g.m.principalUsage(principal, "sessions", int64(n))
		}
		g.use.mu.Unlock()
	}
	g.use.mu.Lock()
	defer g.use.mu.Unlock()
	u := g.use.get(principal)
	if u.sessions >= l.Sessions {
		return errf(http.StatusTooManyRequests, api.CodeLimitReached, fmt.Sprintf("this principal already has %d sessions (its limit); delete some first", u.sessions))
	}
	u.sessions++
	g.m.principalUsage(principal, "sessions", 1)
	return nil
}

func (g *Gateway) sessionRemoved(principal string) {
	g.use.mu.Lock()
	defer g.use.mu.Unlock()
	if u := g.use.get(principal); u.sessionsKnown && u.sessions > 0 {
		u.sessions--
		g.m.principalUsage(principal, "sessions", -1)
	}
}

// spend records a priced model call of principal.
func (g *Gateway) spend(principal string, usd float64) {
	if usd <= 0 {
		return
	}
	day := g.cfg.Now().UTC().Format(time.DateOnly)
	g.use.mu.Lock()
	u := g.use.get(principal)
	if u.day != day {
		u.day, u.spent = day, 0
	}
	u.spent += usd
	g.use.mu.Unlock()
	g.m.principalSpend(principal, usd)
	if l, ok := g.store.(store.SpendLedger); ok {
		// Not the turn's context: a spend made is recorded even when
		// the turn is being interrupted.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := l.AddSpend(ctx, principal, day, usd); err != nil {
			g.log.Warn("spend not recorded in the database: the daily limit counts it on this node only until a restart",
				"principal", principal, "usd", usd, "err", err)
		}
	}
}

// spentToday is principal's spend of day: what the database recorded (all
// nodes, earlier runs) or, when that is less or unreadable, what this
// process counted.
func (g *Gateway) spentToday(ctx context.Context, principal, day string) float64 {
	g.use.mu.Lock()
	u := g.use.get(principal)
	spent := u.spent
	if u.day != day {
		spent = 0
	}
	g.use.mu.Unlock()
	if l, ok := g.store.(store.SpendLedger); ok {
		db, err := l.Spend(ctx, principal, day)
		if err != nil {
			g.log.Warn("daily spend not readable from the database; using this node's count", "principal", principal, "err", err)
		}
		spent = max(spent, db)
	}
	return spent
}

// countSessions counts the principal's stored sessions, up to limit.
func (g *Gateway) countSessions(ctx context.Context, principal string, limit int) (int, error) {
	list, err := g.store.ListSessions(ctx, store.ListOptions{Principal: principal, Limit: limit})
	if err != nil {
		return 0, err
	}
	return len(list), nil
}

// resolveModel names the provider and model a session would use: the
// primary route's where empty, a configured provider's default model.
func (g *Gateway) resolveModel(provider, model string) (string, string, error) {
	primary := g.routes[0]
	if provider == "" {
		provider = primary.Provider.Name()
	}
	if model != "" {
		return provider, model, nil
	}
	if provider == primary.Provider.Name() {
		return provider, primary.Model, nil
	}
	// Another provider's default model is its agent's: the one a session
	// naming the provider alone would run with (built once, then cached).
	a, err := g.agent(g.spec("", SessionSandbox{}, provider, ""))
	var u *UnsupportedError
	if errors.As(err, &u) {
		return "", "", errf(http.StatusBadRequest, api.CodeNotImplemented, u.Error())
	}
	if err != nil {
		return "", "", errf(http.StatusBadRequest, api.CodeModelNotAllowed, "provider "+strconv.Quote(provider)+" is not available to this principal")
	}
	return provider, a.Routes()[0].Model, nil
}

// SpendLimitError ends a turn before a model call that would pass the
// principal's daily spending limit.
type SpendLimitError struct {
	Principal       string
	LimitUSD        float64
	SpentUSD        float64
	EstimateUSD     float64
	Provider, Model string
}

func (e *SpendLimitError) Error() string {
	return fmt.Sprintf("the daily spending limit of $%.4f for %q is reached: $%.4f spent today (UTC), and the next call to %s/%s would cost about $%.4f more; it resets at 00:00 UTC or when the operator raises serve.limits",
		e.LimitUSD, e.Principal, e.SpentUSD, e.Provider, e.Model, e.EstimateUSD)
}

// allowance is the engine's check before each model call.
func (g *Gateway) allowance(ctx context.Context, c turn.Allowance) error {
	p, ok := turnPrincipal(ctx)
	if !ok || g.cfg.unlimited {
		return nil
	}
	l := g.limitFor(p)
	if l.SpendUSDPerDay <= 0 {
		return nil
	}
	spent := g.spentToday(ctx, p, g.cfg.Now().UTC().Format(time.DateOnly))
	if spent+c.EstimatedUSD > l.SpendUSDPerDay || spent >= l.SpendUSDPerDay {
		return &SpendLimitError{Principal: p, LimitUSD: l.SpendUSDPerDay, SpentUSD: spent, EstimateUSD: c.EstimatedUSD, Provider: c.Provider, Model: c.Model}
	}
	return nil
}

// turnPrincipalKey carries the principal of a turn in its context (for
// the spend check and accounting, subagents included).
type turnPrincipalKey struct{}

// turnPrincipal is the principal a model call is charged to: the one the
// gateway started the turn for or, for turns the agent starts by itself
// (background reviews), the owner of the reviewed session.
func turnPrincipal(ctx context.Context) (string, bool) {
	if p, ok := ctx.Value(turnPrincipalKey{}).(string); ok {
		return p, true
	}
	return agent.TurnPrincipal(ctx)
}

// subagentModel is the agent's check before a subagent starts on a model
// of its own choosing: the delegating principal's allow-list.
func (g *Gateway) subagentModel(ctx context.Context, provider, model string) error {
	p, ok := turnPrincipal(ctx)
	if !ok || g.modelAllowed(p, provider, model) {
		return nil
	}
	return errf(http.StatusBadRequest, api.CodeModelNotAllowed, provider+"/"+model+" is not allowed for this principal; use the session's model")
}

// spendObserver accounts each priced call to the turn's principal.
type spendObserver struct{ g *Gateway }

func (o spendObserver) StartTurn(ctx context.Context, _ turn.TurnInfo) turn.TurnObserver {
	p, ok := turnPrincipal(ctx)
	if !ok {
		return nil
	}
	return spendTurn{g: o.g, principal: p}
}

type spendTurn struct {
	g         *Gateway
	principal string
}

func (t spendTurn) Event(ev *turn.Event) {
	if ev.Kind == turn.EventCallEnd && ev.Price == turn.PriceKnown {
		t.g.spend(t.principal, ev.CostUSD)
	}
}

func (spendTurn) End(*turn.Result) {}

// modelAllowed reports whether principal may use provider/model: its
// Models patterns, or by default the configured routes.
func (g *Gateway) modelAllowed(principal, provider, model string) bool {
	if g.cfg.unlimited {
		return true
	}
	name := provider + "/" + model
	l := g.limitFor(principal)
	if l.Models == nil {
		for _, r := range g.routes {
			if r.Provider.Name() == provider && r.Model == model {
				return true
			}
		}
		return false
	}
	for _, p := range l.Models {
		if p == name || p == "*" {
			return true
		}
		if ok, err := path.Match(p, name); err == nil && ok {
			return true
		}
		// "provider/*" also covers model names with slashes
		// (openrouter/anthropic/claude-…).
		if pre, ok := strings.CutSuffix(p, "/*"); ok && strings.HasPrefix(name, pre+"/") {
			return true
		}
	}
	return false
}
