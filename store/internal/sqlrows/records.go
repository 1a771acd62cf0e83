package sqlrows

import (
	"time"

	"github.com/talaria-agent/talaria/store"
)

// Text columns that may hold any bytes are bytea in PostgreSQL, so the
// scanners below read them as []byte, which both drivers fill from TEXT
// and bytea alike.

// The column list ScanSession reads is SessionColsHead, the expression for
// UpdatedAt (the backends keep it differently), then SessionColsTail.
const (
	SessionColsHead = `id, title, provider, model, parent_session_id, kind, end_reason, system_prompt, cwd,
	started_at, `
	SessionColsTail = `, ended_at,
	input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, usage_reported,
	cost_usd, api_calls, principal, prompt_stamp, prompt_extra,
	(SELECT count(*) FROM messages m WHERE m.session_id = sessions.id)`
)

// ScanSession reads one row of SessionColsHead, updated_at, SessionColsTail.
func ScanSession(sc Scanner) (store.Session, error) {
	var (
		ss               store.Session
		prompt, extra    []byte
		started, updated int64
		ended            *int64
	)
	err := sc.Scan(&ss.ID, &ss.Title, &ss.Provider, &ss.Model, &ss.ParentID, &ss.Kind, &ss.EndReason, &prompt, &ss.Cwd,
		&started, &updated, &ended,
		&ss.Usage.InputTokens, &ss.Usage.OutputTokens, &ss.Usage.CacheReadTokens, &ss.Usage.CacheWriteTokens,
		&ss.Usage.ReasoningTokens, &ss.Usage.Reported,
		&ss.CostUSD, &ss.APICalls, &ss.Principal, &ss.PromptStamp, &extra, &ss.MessageCount)
	if err != nil {
		return ss, err
	}
	ss.SystemPrompt, ss.PromptExtra = string(prompt), string(extra)
	ss.StartedAt = FromNanos(started)
	ss.UpdatedAt = FromNanos(updated)
	ss.EndedAt = fromNullNanos(ended)
	return ss, nil
}

// TokenCols is the column list ScanToken reads.
const TokenCols = `id, name, principal, hash, scope, managed, created_at, revoked_at`

// ScanToken reads one row of TokenCols.
func ScanToken(sc Scanner) (store.Token, error) {
	var (
		t       store.Token
		created int64
		revoked *int64
	)
	err := sc.Scan(&t.ID, &t.Name, &t.Principal, &t.Hash, &t.Scope, &t.Managed, &created, &revoked)
	t.CreatedAt = FromNanos(created)
	t.RevokedAt = fromNullNanos(revoked)
	return t, err
}

// CooldownCols is the column list ScanCooldown reads.
const CooldownCols = `provider, base_url, key_id, until, reason, set_at`

// ScanCooldown reads one row of CooldownCols.
func ScanCooldown(sc Scanner) (store.Cooldown, error) {
	var (
		c            store.Cooldown
		until, setAt int64
	)
	err := sc.Scan(&c.Provider, &c.BaseURL, &c.KeyID, &until, &c.Reason, &setAt)
	c.Until, c.SetAt = FromNanos(until), FromNanos(setAt)
	return c, err
}

// TurnEventCols is the column list ScanTurnEvent reads.
const TurnEventCols = `session_id, turn_id, seq, kind, name, started_at, duration_ns, cost_usd, detail`

// ScanTurnEvent reads one row of TurnEventCols.
func ScanTurnEvent(sc Scanner) (store.TurnEvent, error) {
	var (
		e          store.TurnEvent
		start, dur int64
	)
	err := sc.Scan(&e.SessionID, &e.TurnID, &e.Seq, &e.Kind, &e.Name, &start, &dur, &e.CostUSD, &e.Detail)
	e.Start, e.Duration = FromNanos(start), time.Duration(dur)
	return e, err
}

// MemoryCols is the column list ScanMemory reads.
const MemoryCols = `id, workspace, user_name, text, source_session, created_at`

// ScanMemory reads one row of MemoryCols.
func ScanMemory(sc Scanner) (store.MemoryEntry, error) {
	var (
		e    store.MemoryEntry
		text []byte
		at   int64
	)
	err := sc.Scan(&e.ID, &e.Workspace, &e.User, &text, &e.SourceSession, &at)
	e.Text, e.CreatedAt = string(text), FromNanos(at)
	return e, err
}

// QueueCols is the column list ScanQueued reads.
const QueueCols = `id, session_id, turn_id, text, created_at, started_at`

// ScanQueued reads one row of QueueCols.
func ScanQueued(sc Scanner) (store.QueuedMessage, error) {
	var (
		m       store.QueuedMessage
		text    []byte
		created int64
		started *int64
	)
	err := sc.Scan(&m.ID, &m.SessionID, &m.TurnID, &text, &created, &started)
	m.Text, m.CreatedAt, m.StartedAt = string(text), FromNanos(created), fromNullNanos(started)
	return m, err
}

// ToolCallCols is the column list ScanToolCall reads.
const ToolCallCols = `session_id, turn_id, call_id, tool, node, fence, args_hash, state, result_id, is_error,
	path, before_hash, after_hash, started_at, finished_at`

// ScanToolCall reads one row of ToolCallCols.
func ScanToolCall(sc Scanner) (store.ToolCallRecord, error) {
	var (
		r                 store.ToolCallRecord
		state             string
		started, finished int64
	)
	err := sc.Scan(&r.SessionID, &r.TurnID, &r.CallID, &r.Tool, &r.Node, &r.Fence, &r.ArgsHash, &state, &r.ResultID,
		&r.IsError, &r.Path, &r.BeforeHash, &r.AfterHash, &started, &finished)
	r.State = store.ToolCallState(state)
	r.StartedAt = FromNanos(started)
	if finished != 0 {
		r.FinishedAt = FromNanos(finished)
	}
	return r, err
}

// ToolStartedArgs are a started call's tool_calls values, in the order both
// backends' statements number them: session_id, call_id, turn_id, tool,
// node, fence, args_hash, state, path, before_hash, started_at. They are
// written into the caller's array a, which stays on the caller's stack as
// a literal argument list would (a returned []any would be one more
// allocation per call, on every tool call of every turn); the same holds
// for the other ...Args functions.
func ToolStartedArgs(a *[11]any, rec *store.ToolCallRecord) []any {
	*a = [11]any{rec.SessionID, rec.CallID, rec.TurnID, rec.Tool, rec.Node, rec.Fence, rec.ArgsHash,
		string(store.ToolCallStarted), rec.Path, rec.BeforeHash, Nanos(rec.StartedAt)}
	return a[:]
}

// ToolFinishedArgs are a finished call's, likewise: session_id, call_id,
// turn_id, tool, node, fence, args_hash, state, result_id, is_error, path,
// before_hash, after_hash, started_at, finished_at.
func ToolFinishedArgs(a *[15]any, rec *store.ToolCallRecord) []any {
	*a = [15]any{rec.SessionID, rec.CallID, rec.TurnID, rec.Tool, rec.Node, rec.Fence, rec.ArgsHash,
		string(store.ToolCallFinished), rec.ResultID, rec.IsError, rec.Path, rec.BeforeHash, rec.AfterHash,
		Nanos(rec.StartedAt), Nanos(rec.FinishedAt)}
	return a[:]
}
