package turn

import (
	"context"
	"fmt"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// DefaultPressureRatio is the share of the model's window at which a
// request that compression will not shrink is warned about
// (Config.PressureRatio).
const DefaultPressureRatio = 0.85

// Pressure is the context-pressure warning (Hooks.ContextPressure): the
// request is past Ratio of the window and compression will not help this
// turn. It is said once, and again only after the session went back under
// the ratio and crossed it again, across turns too.
type Pressure struct {
	// Tokens is the request's estimated size, Window the model's.
	Tokens int     `json:"tokens"`
	Window int     `json:"window"`
	Ratio  float64 `json:"ratio"` // the warning ratio crossed
	Model  string  `json:"model"`
	// Compression is "disabled" (none configured) or "exhausted" (its
	// passes for this turn are used up or made no progress).
	Compression string `json:"compression"`
	// Advice says what to do, for people.
	Advice string `json:"advice"`
}

// Line is the warning as one status line.
func (p Pressure) Line() string {
	return fmt.Sprintf("context is ~%d tokens, %.0f%% of %s's %d-token window, and compression is %s: %s",
		p.Tokens, 100*float64(p.Tokens)/float64(max(p.Window, 1)), p.Model, p.Window, p.Compression, p.Advice)
}

// pressureRatio is the configured warning ratio; 0 when the warning is off.
func (e *Engine) pressureRatio() float64 {
	switch r := e.cfg.PressureRatio; {
	case r < 0 || r >= 1:
		return 0
	case r == 0:
		return DefaultPressureRatio
	default:
		return r
	}
}

// checkPressure runs at the pre-API site (preflight), the only place that
// warns, with the request's estimate: over the ratio while compression
// cannot act, it warns if armed and disarms; back under, it re-arms. The
// armed state outlives the turn through the transcript (savePressure).
func (e *Engine) checkPressure(st *state, compressionOff bool) {
	ratio := e.pressureRatio()
	win := st.model.Window
	if ratio == 0 || win <= 0 {
		return
	}
	limit := int(ratio * float64(win))
	if !st.pressureKnown {
		st.pressureArmed = pressureArmed(st.rows)
		st.pressureStart, st.pressureKnown = st.pressureArmed, true
	}
	if st.estimate < limit {
		st.pressureArmed = true
		return
	}
	if !compressionOff || !st.pressureArmed {
		return
	}
	st.pressureArmed = false
	p := Pressure{Tokens: st.estimate, Window: win, Ratio: ratio, Model: e.route(st).Model, Compression: "exhausted",
		Advice: "run /compact, start a new session, or use a model with a larger window before the next message"}
	if e.cfg.Compressor == nil {
		p.Compression = "disabled"
		p.Advice = "start a new session, use a model with a larger window, or turn compression on (compression.disabled: false)"
	}
	st.pressure = &p
	e.observeGuard(st, "context_pressure", "warned")
	st.hooks.emit(p)
}

// pressureArmed reads the warning state a session's transcript holds: the
// newest warning row (store.RowPressure) disarms, the newest back-under row
// (store.RowPressureCleared) arms. Compression archives them, rotation
// starts without them: both leave the session armed, as it is back under.
func pressureArmed(rows []store.Message) bool {
	for i := len(rows) - 1; i >= 0; i-- {
		switch rows[i].Kind {
		case store.RowPressure:
			return false
		case store.RowPressureCleared:
			return true
		}
	}
	return true
}

// savePressure keeps the warning state in the transcript when the turn
// changed it, as a display-only row at the end of the turn (never between
// a call and its results): the warning said, so the next turn of the
// session does not say it again, or the session back under, so it may.
func (e *Engine) savePressure(ctx context.Context, st *state) {
	if !st.pressureKnown || st.pressureArmed == st.pressureStart || st.res.Exit == ExitLeaseLost {
		return
	}
	row := &store.Message{Kind: store.RowPressureCleared, Synthetic: true}
	if st.pressureArmed {
		row.Message = llm.NewText(llm.RoleAssistant, fmt.Sprintf("Context is back under %.0f%% of the window; the context warning is re-armed.", 100*e.pressureRatio()))
	} else {
		row.Kind = store.RowPressure
		row.Message = llm.NewText(llm.RoleAssistant, "Context warning: "+st.pressure.Line())
		row.Model = st.pressure.Model
	}
	if err := e.appendRows(ctx, st, row); err != nil {
		e.log.Warn("could not keep the context warning state in the transcript", "session", st.sessionID(), "error", err)
	}
}
