package sqlrows

import "github.com/talaria-agent/talaria/store"

// The statements below run in a backend's own code, mostly inside its
// transactions, beside its dialect-specific ones: SQLite reads them as
// written, PostgreSQL numbers their placeholders once.

// SetPromptSQL replaces session ?'s prompt and stamp (the first two ?)
// while its stamp is still the last ?: SetSystemPrompt, inside a backend's
// fenced transaction.
const SetPromptSQL = `UPDATE sessions SET system_prompt = ?, prompt_stamp = ?
	WHERE id = ? AND prompt_stamp = ?`

// AddUsageSQL adds usage, cost and calls to a session (AddUsageArgs):
// AddUsage, and a backend's AppendSpend inside its own transaction.
const AddUsageSQL = `UPDATE sessions SET
	input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,
	cache_read_tokens = cache_read_tokens + ?, cache_write_tokens = cache_write_tokens + ?,
	reasoning_tokens = reasoning_tokens + ?, usage_reported = usage_reported OR ?,
	cost_usd = cost_usd + ?, api_calls = api_calls + ?, updated_at = ?
	WHERE id = ?`

// AddUsageArgs are AddUsageSQL's values for adding sp to session id now.
func AddUsageArgs(a *[10]any, id string, sp store.Spend) []any {
	u := sp.Usage
	*a = [10]any{u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens,
		u.Reported, sp.CostUSD, sp.APICalls, Nanos(Now()), id}
	return a[:]
}

// TurnEventSQL inserts one turn event (TurnEventArgs), inside a backend's
// transaction for the whole turn's events.
const TurnEventSQL = `INSERT INTO turn_events
	(session_id, turn_id, seq, kind, name, started_at, duration_ns, cost_usd, detail)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`

// TurnEventArgs are TurnEventSQL's values for e.
func TurnEventArgs(a *[9]any, e *store.TurnEvent) []any {
	*a = [9]any{e.SessionID, e.TurnID, e.Seq, e.Kind, e.Name, Nanos(e.Start), int64(e.Duration), e.CostUSD, e.Detail}
	return a[:]
}

// LeaseSQL reads the lease of session ? (holder, token, expires_at,
// released) when taking it over.
const LeaseSQL = `SELECT holder, token, expires_at, released FROM leases WHERE session_id = ?`
