package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/talaria-agent/talaria/observe"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

var traceHelp = cmdHelp{
	name:  "trace",
	usage: "SESSION [--turn N|TURN_ID] [--all] [--json]",
	about: `Prints a turn's timeline from the recorded events: model calls and failed
attempts (with the class and the recovery chosen), waits before retries,
tool calls, compressions, guard firings and fallbacks, each with its
offset from the turn's start, duration and cost. No collector is needed.
Default: the session's last turn. --turn N picks the Nth turn (1 is the
first; negative counts from the end); --all prints every turn.

Exit codes: 0 printed, 1 storage error or no recorded turn, 2 usage.`,
	examples: []string{
		"talaria trace 20260801-101500-a1b2c3d4e5",
		"talaria trace 20260801-101500-a1b2c3d4e5 --turn 1",
		"talaria trace 20260801-101500-a1b2c3d4e5 --all --json",
	},
}

func (c *cli) traceCmd(ctx context.Context, args []string) int {
	h := traceHelp
	fs := h.flags()
	turnSel := fs.String("turn", "", "turn number (1 = first, -1 = last) or turn id")
	all := fs.Bool("all", false, "print every recorded turn of the session")
	jsonOut := fs.Bool("json", false, "print JSON")
	var dbURL string
	databaseFlag(fs, &dbURL)
	if code, done := c.parseFlags(fs, h, interleaved(args)); done {
		return code
	}
	if fs.NArg() != 1 {
		return c.usageError(h, "needs one session id (talaria sessions list shows them)")
	}
	sid := fs.Arg(0)
	// The selector is checked before the store is opened: a typo is a
	// usage error whatever the session holds (issue 25 minor).
	if *turnSel != "" {
		if *all {
			return c.usageError(h, "--turn and --all pick different turns; give one")
		}
		if !validTurnSel(*turnSel) {
			return c.usageError(h, "--turn %q: give a turn number (1 = first, -1 = last) or a turn id like t101500a1b2c3", *turnSel)
		}
	}
	cfg, err := c.loadConfig()
	if err != nil {
		return c.fail(exitUsage, "%v", err)
	}
	st, err := c.openStoreFor(ctx, cfg, dbURL, true)
	if err != nil {
		return c.fail(exitOther, "%v", err)
	}
	defer st.Close()
	sess, err := st.GetSession(ctx, sid)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return c.fail(exitOther, "no session %s (talaria sessions list shows them)", sid)
		}
		return c.fail(exitOther, "%v", err)
	}
	evs, err := st.TurnEvents(ctx, sid, "")
	if err != nil {
		return c.fail(exitOther, "%v", err)
	}
	turns := groupTurns(evs)
	if len(turns) == 0 {
		return c.fail(exitOther, "session %s has no recorded turns (recording started with this version; telemetry.no_record turns it off)", sid)
	}
	picked := turns[len(turns)-1:]
	switch {
	case *all:
		picked = turns
	case *turnSel != "":
		t, ok := pickTurn(turns, *turnSel)
		if !ok {
			return c.fail(exitUsage, "--turn %s: the session has %d recorded turns", *turnSel, len(turns))
		}
		picked = []tracedTurn{t}
	}
	if *jsonOut {
		out := traceJSON{SessionID: sid, SessionCostUSD: sess.CostUSD, SessionAPICalls: sess.APICalls, Turns: picked}
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return c.fail(exitOther, "%v", err)
		}
		return exitOK
	}
	for i, t := range picked {
		if i > 0 {
			fmt.Fprintln(c.stdout)
		}
		printTurn(c.stdout, t, len(turns))
	}
	fmt.Fprintf(c.stdout, "\nsession %s total: %s over %d API calls\n", sid, money(sess.CostUSD), sess.APICalls)
	return exitOK
}

// tracedTurn is one turn's recorded events, the turn's own first.
type tracedTurn struct {
	Index  int          `json:"index"`
	TurnID string       `json:"turn_id"`
	Events []traceEvent `json:"events"`
}

type traceEvent struct {
	Seq        int             `json:"seq"`
	Kind       string          `json:"kind"`
	Name       string          `json:"name,omitempty"`
	Start      time.Time       `json:"start"`
	OffsetMS   float64         `json:"offset_ms"`
	DurationMS float64         `json:"duration_ms"`
	CostUSD    float64         `json:"cost_usd,omitempty"`
	Detail     json.RawMessage `json:"detail,omitempty"`
}

type traceJSON struct {
	SessionID       string       `json:"session_id"`
	SessionCostUSD  float64      `json:"session_cost_usd"`
	SessionAPICalls int64        `json:"session_api_calls"`
	Turns           []tracedTurn `json:"turns"`
}

// groupTurns splits a session's events into turns, in the order recorded,
// and sorts each turn's events by start (tool calls are recorded as they
// end).
func groupTurns(evs []store.TurnEvent) []tracedTurn {
	var turns []tracedTurn
	idx := map[string]int{}
	for _, e := range evs {
		if e.Kind == observe.SpanEventKind {
			continue // where a turn's span was, for the next attempt's link
		}
		i, ok := idx[e.TurnID]
		if !ok {
			i = len(turns)
			idx[e.TurnID] = i
			turns = append(turns, tracedTurn{Index: i + 1, TurnID: e.TurnID})
		}
		te := traceEvent{Seq: e.Seq, Kind: e.Kind, Name: e.Name, Start: e.Start,
			DurationMS: float64(e.Duration.Microseconds()) / 1000, CostUSD: e.CostUSD}
		if json.Valid([]byte(e.Detail)) {
			te.Detail = json.RawMessage(e.Detail)
		}
		turns[i].Events = append(turns[i].Events, te)
	}
	for i := range turns {
		ev := turns[i].Events
		slices.SortStableFunc(ev, func(a, b traceEvent) int {
			if a.Kind == "turn" || b.Kind == "turn" {
				return boolInt(b.Kind == "turn") - boolInt(a.Kind == "turn")
			}
			return a.Start.Compare(b.Start)
		})
		t0 := ev[0].Start
		for j := range ev {
			ev[j].OffsetMS = float64(ev[j].Start.Sub(t0).Microseconds()) / 1000
		}
	}
	return turns
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// validTurnSel reports whether sel can name a turn: a non-zero number, or
// an id of the shape agent.NewTurnID makes ("t", hhmmss, six hex digits).
func validTurnSel(sel string) bool {
	if n, err := strconv.Atoi(sel); err == nil {
		return n != 0
	}
	if len(sel) != 13 || sel[0] != 't' {
		return false
	}
	for i, r := range sel[1:] {
		if !('0' <= r && r <= '9' || i >= 6 && 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

func pickTurn(turns []tracedTurn, sel string) (tracedTurn, bool) {
	if n, err := strconv.Atoi(sel); err == nil {
		if n < 0 {
			n = len(turns) + 1 + n
		}
		if n >= 1 && n <= len(turns) {
			return turns[n-1], true
		}
		return tracedTurn{}, false
	}
	for _, t := range turns {
		if t.TurnID == sel {
			return t, true
		}
	}
	return tracedTurn{}, false
}

func details(raw json.RawMessage) map[string]any {
	m := map[string]any{}
	_ = json.Unmarshal(raw, &m)
	return m
}

func money(usd float64) string { return fmt.Sprintf("$%.4f", usd) }

func printTurn(w io.Writer, t tracedTurn, of int) {
	head := t.Events[0]
	d := details(head.Detail)
	fmt.Fprintf(w, "turn %d/%d %s · %v · %s · %v API calls", t.Index, of, t.TurnID, d["exit"],
		time.Duration(head.DurationMS*float64(time.Millisecond)).Round(time.Millisecond), num(d["api_calls"]))
	fmt.Fprintf(w, " · %v in / %v out tokens · %s\n", num(d["input_tokens"]), num(d["output_tokens"]), costNote(head.CostUSD, d["pricing"]))
	if s, ok := d["continued_as"].(string); ok {
		fmt.Fprintf(w, "  (the session continued as %s during this turn)\n", s)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, e := range t.Events[1:] {
		fmt.Fprintf(tw, "  +%.3fs\t%s\t%s\t%s\t%s\n", e.OffsetMS/1000, e.Kind, e.Name, dur(e.DurationMS), describeEvent(e))
	}
	_ = tw.Flush()
}

// costNote words a cost by how it is known; pricing is the stored
// detail's "pricing" (absent: no API call).
func costNote(usd float64, pricing any) string {
	p, _ := pricing.(string)
	switch turn.Pricing(p) {
	case turn.PricingSubscription:
		return "included in subscription"
	case turn.PricingPartlySubscription:
		return money(usd) + " + subscription"
	case turn.PricingUnknown:
		return "cost unknown (≥ " + money(usd) + ": a model has no price)"
	case turn.PricingNone:
		return "no API call"
	}
	return money(usd)
}

func dur(msec float64) string {
	if msec == 0 {
		return ""
	}
	return time.Duration(msec * float64(time.Millisecond)).Round(100 * time.Microsecond).String()
}

func num(v any) any {
	if v == nil {
		return int64(0)
	}
	if f, ok := v.(float64); ok {
		return int64(f)
	}
	return v
}

// describeEvent is the one-line summary of an event's details.
func describeEvent(e traceEvent) string {
	d := details(e.Detail)
	var parts []string
	switch e.Kind {
	case "call":
		parts = append(parts, fmt.Sprintf("%v in / %v out", num(d["input_tokens"]), num(d["output_tokens"])))
		if r := num(d["cache_read_tokens"]); r != int64(0) {
			parts = append(parts, fmt.Sprintf("%v cached", r))
		}
		if f, ok := d["finish_reason"]; ok {
			parts = append(parts, fmt.Sprint(f))
		}
		parts = append(parts, costNote(e.CostUSD, d["pricing"]))
		if rm, ok := d["request_model"].(string); ok && rm != e.Name {
			parts = append(parts, "asked for "+rm)
		}
	case "call_failed":
		parts = append(parts, fmt.Sprintf("%v → %v", d["class"], d["decision"]))
		if s := num(d["status"]); s != int64(0) {
			parts = append(parts, fmt.Sprintf("HTTP %v", s))
		}
	case "tool":
		parts = append(parts, fmt.Sprintf("%v bytes", num(d["result_bytes"])))
		if d["error"] == true {
			parts = append(parts, "error")
		}
	case "compression":
		parts = append(parts, fmt.Sprintf("pass %v: ~%v → ~%v tokens", num(d["pass"]), num(d["before_tokens"]), num(d["after_tokens"])))
		if e.CostUSD > 0 {
			parts = append(parts, money(e.CostUSD))
		}
	case "guard":
		parts = append(parts, fmt.Sprint(d["action"]))
	case "fallback":
		parts = append(parts, fmt.Sprintf("%v: %v → %v", d["class"], d["from"], d["to"]))
	case "rotation":
		parts = append(parts, fmt.Sprintf("another key after %v", d["class"]))
	case "todo", "prompt_rebuilt":
		parts = append(parts, fmt.Sprint(d["line"]))
	case "handoff":
		// Its node died; another continued the turn (gateway takeOver).
		parts = append(parts, fmt.Sprintf("moved from %v to %v (%v), handoff %v of at most %v",
			d["from"], d["to"], d["reason"], num(d["count"]), num(d["max"])))
	}
	return strings.Join(parts, " · ")
}
