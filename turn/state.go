package turn

import (
	"time"

	"github.com/talaria-agent/talaria/catalogue"
	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/guard"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/transcript"
)

// state is all mutable state of one turn. It is created by newState at turn
// start and dropped at its end, so nothing (retry counters, guard streaks,
// clamps, credential picks) can leak into the next turn.
type state struct {
	// in is the turn's input as given, less its Session and Fence: those
	// moved to live, their one copy, which a rotation replaces.
	in    Input
	live  sessionAt
	hooks *Hooks
	start time.Time

	// res is the running tally and, once finalize fills in the rest, the
	// turn's result: counters, usage and cost, routes, exit and failure
	// are kept there and nowhere else.
	res Result

	// rows is the session's live transcript as stored, this turn's rows
	// included; it mirrors the store so assembling a request reads no disk.
	rows []store.Message
	// promptChecked: the turn compared the session's prompt stamp
	// (checkPrompt), which it does once, before its first call.
	promptChecked bool

	// route in use: index into Config.Routes, its catalogue entry and the
	// credential picked from its pool.
	routeIdx int
	model    catalogue.Model
	cred     failover.Credential
	hasCred  bool
	// bench is the cooldown this turn's last key failure put on its key,
	// told in the failure so the person knows how long it lasts.
	bench store.Cooldown

	// req is the request assembled for this iteration; offerTools says
	// whether it offers tools (not on the grace call); estimate is its
	// expected prompt size from the preflight gate.
	req        *llm.Request
	offerTools bool
	estimate   int
	// proj and wire keep what earlier calls of the turn projected and
	// encoded, so a call pays for what was added (assemble).
	proj transcript.Projector
	wire llm.WireCache
	// wireStarts is proj.Starts() when wire was last valid for it.
	wireStarts uint64

	saved savedUsage // already added to the session (flushUsage)
	// subscription: some call ran on a subscription route; priced: some
	// call had a price.
	subscription, priced bool

	// obs watches this turn; nil when no observer is attached. lastLatency
	// and lastTTFT time the latest API call.
	obs                   TurnObserver
	lastLatency, lastTTFT time.Duration

	// context management
	budget *compact.Budget
	acct   compact.Accountant

	// recoveries bounded per turn
	maxTokens int // 0: default; set by an output-cap clamp
	clamped   bool
	repaired  map[failover.Class]bool
	stripped  map[string]bool // request shape repairs in effect ("images", "reasoning")

	// guards
	streak *guard.Streak
	empty  *guard.EmptyGuard
	nudges int

	// truncatedCalls counts answers whose tool call the output limit cut;
	// midStop is set once a stop mid-sentence after tool results was
	// continued; cutCall describes a stream that died inside a large tool
	// call's arguments, for the retry's note; emergency is set once the
	// emergency compression pass ran.
	truncatedCalls int
	midStop        bool
	cutCall        *cutCall
	emergency      bool

	// length continuation: fragments of a truncated answer (their stored
	// rows are found again by continuationRows when the answer settles).
	fragments []string
	scaffold  []int64

	// pendingFinal is a final answer whose early flush failed; the
	// finalizer retries it so it is never dropped silently.
	pendingFinal *store.Message

	// heldIteration: an iteration of Input.Budget is drawn for a call
	// not yet made (budget.go).
	heldIteration bool

	// context-pressure warning (pressure.go): pressureArmed is whether it
	// may be said, read from the transcript (as pressureStart) once
	// pressureKnown; pressure is the warning said this turn.
	pressureKnown, pressureArmed, pressureStart bool
	pressure                                    *Pressure

	// todoNext is the plan a todo call of the turn left, not yet stored
	// while todoDirty (todo.go).
	todoNext  []tool.TodoItem
	todoDirty bool

	// explanation is said before the failure's message in
	// Result.Explanation (see explain).
	explanation string
}

// sessionID is the id of the session the turn writes to.
func (st *state) sessionID() string { return st.live.session.ID }

func (e *Engine) newState(in Input) *state {
	live := sessionAt{session: in.Session, fence: in.Fence}
	in.Session, in.Fence = nil, store.Fence{}
	st := &state{
		in:       in,
		live:     live,
		res:      Result{TurnID: in.TurnID, CostKnown: true},
		hooks:    &in.Hooks,
		start:    e.cfg.Now(),
		budget:   compact.NewBudget(e.cfg.CompressAttempts),
		repaired: map[failover.Class]bool{},
		stripped: map[string]bool{},
		streak:   guard.NewStreak(guard.DefaultStreakThreshold),
		empty:    guard.NewEmptyGuard(e.cfg.Guards.emptyRetries(), e.cfg.Guards.EmptyCostThresholdUSD),
	}
	e.useRoute(st, 0)
	return st
}

// setExit records why the turn ends; the first reason set wins, so a late
// cleanup error cannot overwrite the real cause.
func (st *state) setExit(x Exit, f *Failure) {
	if st.res.Exit != "" {
		return
	}
	st.res.Fail(x, f)
}

// route returns the route in use.
func (e *Engine) route(st *state) *Route { return &e.cfg.Routes[st.routeIdx] }

// useRoute switches the turn to route i and resets what depends on the
// model: its catalogue entry, token accounting and the compression budget.
func (e *Engine) useRoute(st *state, i int) {
	st.routeIdx = i
	r := &e.cfg.Routes[i]
	st.model = e.cfg.Catalogue.Lookup(r.Model)
	st.hasCred = false
	st.acct.Reset()
	st.budget.Reset()
	st.maxTokens = 0
	st.clamped = false
	st.empty.Reset()
	st.res.Routes = append(st.res.Routes, RouteAttempt{Provider: r.Provider.Name(), Model: r.Model})
}

// currentRoute returns the record of the route in use.
func (st *state) currentRoute() *RouteAttempt { return &st.res.Routes[len(st.res.Routes)-1] }

// lastSeq is the Seq of the newest live row.
func (st *state) lastSeq() int64 {
	if len(st.rows) == 0 {
		return 0
	}
	return st.rows[len(st.rows)-1].Seq
}
