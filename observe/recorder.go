package observe

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// EventStore is where a Recorder writes.
type EventStore interface {
	AppendTurnEvents(ctx context.Context, evs ...store.TurnEvent) error
}

// Recorder is a turn.Observer that keeps each turn's timeline (calls,
// failed attempts, waits, tools, compressions, guards, fallbacks) in the
// store, for `talaria trace`. It records metadata only, never content:
// the transcript already holds that. Events are buffered in memory and
// written in one transaction when the turn ends, so recording adds one
// write per turn, not one per event.
type Recorder struct {
	Store  EventStore
	Logger *slog.Logger
}

// StartTurn begins buffering a turn's events.
func (r *Recorder) StartTurn(ctx context.Context, t turn.TurnInfo) turn.TurnObserver {
	return &recording{r: r, ctx: context.WithoutCancel(ctx), info: t}
}

type recording struct {
	r    *Recorder
	ctx  context.Context // outlives an interrupt: the end is still written
	info turn.TurnInfo

	mu         sync.Mutex
	events     []store.TurnEvent
	callStart  time.Time
	answeredBy string
}

func detail(fields map[string]any) string {
	for k, v := range fields {
		switch x := v.(type) {
		case string:
			if x == "" {
				delete(fields, k)
			}
		case int:
			if x == 0 {
				delete(fields, k)
			}
		case int64:
			if x == 0 {
				delete(fields, k)
			}
		}
	}
	b, _ := json.Marshal(fields)
	return string(b)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (c *recording) Event(ev *turn.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := store.TurnEvent{Kind: ev.Kind.String(), Start: ev.Time, Name: ev.Model}
	switch ev.Kind {
	case turn.EventRequest:
		c.callStart = ev.Time
		return
	case turn.EventCallEnd:
		c.answeredBy = ev.ResponseModel
		e.Start, e.Duration, e.Name = c.callStart, ev.Latency, ev.ResponseModel
		if ev.Price == turn.PriceKnown {
			e.CostUSD = ev.CostUSD
		}
		e.Detail = detail(map[string]any{"attempt": ev.Attempt, "provider": ev.Provider, "request_model": ev.Model,
			"input_tokens": ev.Usage.PromptTokens(), "output_tokens": ev.Usage.OutputTokens,
			"cache_read_tokens": ev.Usage.CacheReadTokens, "cache_write_tokens": ev.Usage.CacheWriteTokens,
			"finish_reason": string(ev.FinishReason), "ttft_ms": ms(ev.TimeToFirstToken), "pricing": ev.Price.String()})
	case turn.EventCallFailed:
		e.Start, e.Duration = c.callStart, ev.Latency
		e.Detail = detail(map[string]any{"attempt": ev.Attempt, "provider": ev.Provider, "class": ev.Class,
			"status": ev.Status, "decision": ev.Decision, "retryable": ev.Retryable})
		c.events = append(c.events, e)
		if ev.Wait > 0 {
			c.events = append(c.events, store.TurnEvent{Kind: "wait", Name: ev.Class, Start: ev.Time, Duration: ev.Wait})
		}
		return
	case turn.EventToolStart:
		return
	case turn.EventToolEnd:
		e.Name, e.Start, e.Duration = ev.Call.Name, ev.Time.Add(-ev.Duration), ev.Duration
		e.Detail = detail(map[string]any{"call_id": ev.Call.ID, "error": ev.ToolError, "result_bytes": ev.ResultBytes})
	case turn.EventCompression:
		e.Start, e.Duration, e.CostUSD = ev.Time.Add(-ev.Duration), ev.Duration, ev.CostUSD
		e.Name = ev.Outcome
		e.Detail = detail(map[string]any{"pass": ev.Pass, "before_tokens": ev.Before, "after_tokens": ev.After, "outcome": ev.Outcome})
	case turn.EventGuard:
		e.Name = ev.Guard
		e.Detail = detail(map[string]any{"action": ev.Action})
	case turn.EventFallback:
		e.Name = ev.To
		e.Detail = detail(map[string]any{"from": ev.From, "to": ev.To, "class": ev.Class})
	case turn.EventRotation:
		e.Name = ev.Provider
		e.Detail = detail(map[string]any{"class": ev.Class})
	case turn.EventTodo:
		done, total := tool.TodoCounts(ev.Todo)
		e.Name = "todo"
		e.Detail = detail(map[string]any{"done": done, "total": total, "line": tool.TodoLine(ev.Todo)})
	case turn.EventPromptRebuilt:
		e.Name = "system_prompt"
		e.Detail = detail(map[string]any{"line": ev.Prompt.Line(), "tools_added": len(ev.Prompt.ToolsAdded),
			"tools_removed": len(ev.Prompt.ToolsRemoved), "tools_changed": len(ev.Prompt.ToolsChanged),
			"memory": ev.Prompt.Memory, "instructions": ev.Prompt.Instructions})
	case turn.EventSubagentStart, turn.EventSubagentStop:
		e.Name = ev.To
		e.Detail = detail(map[string]any{"outcome": ev.Outcome})
	}
	c.events = append(c.events, e)
}

// End writes the turn's record: the turn itself first, then its events.
func (c *recording) End(res *turn.Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := store.TurnEvent{Kind: "turn", Name: c.answeredBy, Start: c.info.Start, Duration: res.Duration, CostUSD: res.CostUSD}
	if t.Name == "" {
		t.Name = c.info.Model
	}
	f := map[string]any{"exit": string(res.Exit), "api_calls": res.APICalls, "tool_calls": res.ToolCalls,
		"compactions": res.Compactions, "input_tokens": res.Usage.PromptTokens(), "output_tokens": res.Usage.OutputTokens,
		"cache_read_tokens": res.Usage.CacheReadTokens, "cache_write_tokens": res.Usage.CacheWriteTokens,
		"pricing": res.Pricing, "provider": c.info.Provider, "request_model": c.info.Model}
	if res.SessionID != c.info.SessionID {
		f["continued_as"] = res.SessionID
	}
	if res.Failure != nil {
		f["failure"] = res.Failure.Reason()
	}
	t.Detail = detail(f)
	all := append([]store.TurnEvent{t}, c.events...)
	for i := range all {
		all[i].SessionID, all[i].TurnID, all[i].Seq = c.info.SessionID, c.info.TurnID, i+1
	}
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	if err := c.r.Store.AppendTurnEvents(ctx, all...); err != nil && c.r.Logger != nil {
		c.r.Logger.Warn("could not record the turn's events", "session", c.info.SessionID, "turn", c.info.TurnID, "error", err)
	}
}
