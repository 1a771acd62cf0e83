package sqlrows

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// DB is what Portable needs of a backend; its calls fail with a
// *store.Error for op.
type DB interface {
	// Exec runs one write statement and reports how many rows it touched.
	Exec(ctx context.Context, op, query string, args ...any) (int64, error)
	// Each runs one read and calls row on every row it returns.
	Each(ctx context.Context, op string, row func(Scanner) error, query string, args ...any) error
	// Wrap makes err a *store.Error for op, as the backend's calls do.
	Wrap(op string, err error) error
}

// stmt indexes portableSQL.
type stmt int

const (
	setCooldown stmt = iota
	cooldowns
	clearCooldown
	allCooldowns
	addSpend
	spend
	allMemories
	deleteMemory
	clearMemory
	markStarted
	dequeue
	createToken
	listTokens
	revokeToken
	checkWrite
	turnEvents
	setTitle
	addUsage
	numStmts
)

// memoryWhere selects a MemoryQuery's entries: the workspace's shared
// entries, plus the user's own when a user is named.
const memoryWhere = `workspace = ? AND (user_name = '' OR user_name = ?)`

// portableSQL are the statements both databases read alike, written with
// ? placeholders and numbered for a dialect once, by NewPortable.
var portableSQL = [numStmts]string{
	setCooldown: `INSERT INTO cooldowns (provider, base_url, key_id, until, reason, set_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (provider, base_url, key_id) DO UPDATE SET until = excluded.until, reason = excluded.reason,
			set_at = excluded.set_at`,
	cooldowns: `SELECT ` + CooldownCols + ` FROM cooldowns
		WHERE provider = ? AND until > ? ORDER BY until, base_url, key_id`,
	clearCooldown: `DELETE FROM cooldowns WHERE provider = ? AND key_id = ?`,
	allCooldowns:  `SELECT ` + CooldownCols + ` FROM cooldowns ORDER BY provider, base_url, key_id`,
	addSpend: `INSERT INTO principal_spend (principal, day, usd) VALUES (?, ?, ?)
		ON CONFLICT (principal, day) DO UPDATE SET usd = principal_spend.usd + excluded.usd`,
	spend:        `SELECT usd FROM principal_spend WHERE principal = ? AND day = ?`,
	allMemories:  `SELECT ` + MemoryCols + ` FROM memory ORDER BY id`,
	deleteMemory: `DELETE FROM memory WHERE id = ? AND workspace = ?`,
	clearMemory:  `DELETE FROM memory WHERE ` + memoryWhere,
	markStarted:  `UPDATE queue SET started_at = ? WHERE id = ?`,
	dequeue:      `DELETE FROM queue WHERE id = ?`,
	// Names are unique among valid tokens (a revoked one may share its
	// name with its replacement).
	createToken: `INSERT INTO tokens (id, name, principal, hash, scope, managed, created_at, revoked_at)
		SELECT ?, ?, ?, ?, ?, ?, ?, ?
		WHERE CAST(? AS BIGINT) IS NOT NULL OR NOT EXISTS (SELECT 1 FROM tokens WHERE name = ? AND revoked_at IS NULL)`,
	listTokens:  `SELECT ` + TokenCols + ` FROM tokens ORDER BY created_at, id`,
	revokeToken: `UPDATE tokens SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?`,
	checkWrite:  `INSERT INTO health (id, at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at`,
	turnEvents: `SELECT ` + TurnEventCols + `
		FROM turn_events WHERE session_id = ? AND (? = '' OR turn_id = ?) ORDER BY id`,
	setTitle: `UPDATE sessions SET title = ?, updated_at = ? WHERE id = ?`,
	addUsage: AddUsageSQL,
}

// Portable is the store methods whose SQL both databases read alike,
// written once; a backend embeds it. Statements that differ by dialect
// (RETURNING or a last insert id, casts, locking, transactions) stay in
// the backends.
type Portable struct {
	db   DB
	path string // names the database in errors
	sql  [numStmts]string
}

// NewPortable runs the statements on db; bind rewrites a statement's ?
// placeholders for the dialect (nil keeps them).
func NewPortable(db DB, path string, bind func(string) string) Portable {
	p := Portable{db: db, path: path, sql: portableSQL}
	if bind != nil {
		for i, q := range p.sql {
			p.sql[i] = bind(q)
		}
	}
	return p
}

// execOne runs a statement that must touch a row; what names the row in
// the not-found error.
func (p *Portable) execOne(ctx context.Context, op, what string, q stmt, args ...any) error {
	n, err := p.db.Exec(ctx, op, p.sql[q], args...)
	if err == nil && n == 0 {
		return NotFound(op, p.path, what)
	}
	return err
}

// exec runs a statement for op.
func (p *Portable) exec(ctx context.Context, op string, q stmt, args ...any) error {
	_, err := p.db.Exec(ctx, op, p.sql[q], args...)
	return err
}

// list reads every row of q with scan.
func list[T any](ctx context.Context, p *Portable, op string, scan func(Scanner) (T, error), q stmt,
	args ...any) ([]T, error) {
	return List(ctx, p.db, op, scan, p.sql[q], args...)
}

// List reads every row query returns on db with scan: the body of each
// method that lists rows.
func List[T any](ctx context.Context, db DB, op string, scan func(Scanner) (T, error), query string,
	args ...any) ([]T, error) {
	var out []T
	err := db.Each(ctx, op, func(sc Scanner) error {
		v, err := scan(sc)
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	}, query, args...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SetTitle renames a session.
func (p *Portable) SetTitle(ctx context.Context, id, title string) error {
	return p.execOne(ctx, "set title", "session "+id, setTitle, title, Nanos(Now()), id)
}

// AddUsage adds one or more API calls' usage and cost to a session's
// counters, atomically. It works on ended sessions too: a last call's cost
// may be booked after the session rotated.
func (p *Portable) AddUsage(ctx context.Context, id string, u llm.Usage, costUSD float64, apiCalls int64) error {
	return p.execOne(ctx, "add usage", "session "+id, addUsage,
		AddUsageArgs(new([10]any), id, store.Spend{Usage: u, CostUSD: costUSD, APICalls: apiCalls})...)
}

// SetCooldown benches one credential, replacing any earlier cooldown of the
// same provider, endpoint and key, for every user of the database. SetAt is
// filled with now when zero.
func (p *Portable) SetCooldown(ctx context.Context, c store.Cooldown) error {
	setAt := OrNow(c.SetAt)
	return p.exec(ctx, "set cooldown", setCooldown,
		c.Provider, c.BaseURL, c.KeyID, Nanos(c.Until), c.Reason, Nanos(setAt))
}

// Cooldowns lists a provider's cooldowns (of every endpoint) that end after
// at, soonest first.
func (p *Portable) Cooldowns(ctx context.Context, provider string, at time.Time) ([]store.Cooldown, error) {
	return list(ctx, p, "cooldowns", ScanCooldown, cooldowns, provider, at.UnixNano())
}

// ClearCooldown removes a credential's cooldowns, at every endpoint;
// clearing none is not an error.
func (p *Portable) ClearCooldown(ctx context.Context, provider, keyID string) error {
	return p.exec(ctx, "clear cooldown", clearCooldown, provider, keyID)
}

// AllCooldowns lists every stored cooldown, expired ones too, for copying
// the database elsewhere (talaria db migrate) and verifying the copy.
func (p *Portable) AllCooldowns(ctx context.Context) ([]store.Cooldown, error) {
	return list(ctx, p, "all cooldowns", ScanCooldown, allCooldowns)
}

// AddSpend adds usd to principal's spend of day.
func (p *Portable) AddSpend(ctx context.Context, principal, day string, usd float64) error {
	return p.exec(ctx, "add spend", addSpend, principal, day, usd)
}

// Spend is principal's recorded spend of day (0 when none is).
func (p *Portable) Spend(ctx context.Context, principal, day string) (float64, error) {
	var usd float64
	err := p.db.Each(ctx, "spend", func(sc Scanner) error { return sc.Scan(&usd) }, p.sql[spend], principal, day)
	return usd, err
}

// AllMemories lists every memory entry of every workspace and user, by id,
// for copying the database.
func (p *Portable) AllMemories(ctx context.Context) ([]store.MemoryEntry, error) {
	return list(ctx, p, "all memories", ScanMemory, allMemories)
}

// DeleteMemory removes entry id of workspace.
func (p *Portable) DeleteMemory(ctx context.Context, workspace string, id int64) error {
	return p.execOne(ctx, "delete memory", "memory entry "+strconv.FormatInt(id, 10), deleteMemory, id, workspace)
}

// ClearMemory removes exactly the entries Memories(q) lists.
func (p *Portable) ClearMemory(ctx context.Context, q store.MemoryQuery) (int64, error) {
	return p.db.Exec(ctx, "clear memory", p.sql[clearMemory], q.Workspace, q.User)
}

// MarkStarted records that a queued message's turn began.
func (p *Portable) MarkStarted(ctx context.Context, id int64, at time.Time) error {
	return p.execOne(ctx, "mark queued started", "queued message", markStarted, Nanos(at), id)
}

// Dequeue removes a queued message; removing a missing one is not an error.
func (p *Portable) Dequeue(ctx context.Context, id int64) error {
	return p.exec(ctx, "dequeue", dequeue, id)
}

// CreateToken stores a gateway bearer token (its hash only), seen at once
// by every user of the database.
func (p *Portable) CreateToken(ctx context.Context, t *store.Token) error {
	const op = "create token"
	if err := t.Prepare(Now()); err != nil {
		return p.db.Wrap(op, err)
	}
	revoked := NullNanos(t.RevokedAt)
	n, err := p.db.Exec(ctx, op, p.sql[createToken], t.ID, t.Name, t.Principal, t.Hash, t.Scope, t.Managed,
		Nanos(t.CreatedAt), revoked, revoked, t.Name)
	if err == nil && n == 0 {
		return p.db.Wrap(op, fmt.Errorf("token %q: %w", t.Name, store.ErrTokenNameTaken))
	}
	return err
}

// ListTokens lists every token, revoked ones included, oldest first.
func (p *Portable) ListTokens(ctx context.Context) ([]store.Token, error) {
	return list(ctx, p, "list tokens", ScanToken, listTokens)
}

// RevokeToken revokes a token; revoking twice keeps the first time.
func (p *Portable) RevokeToken(ctx context.Context, id string) error {
	return p.execOne(ctx, "revoke token", "token "+id, revokeToken, Nanos(Now()), id)
}

// CheckWrite commits one small write (store.WriteChecker).
func (p *Portable) CheckWrite(ctx context.Context) error {
	return p.exec(ctx, "check write", checkWrite, Nanos(Now()))
}

// TurnEvents lists a session's events (one turn's when turnID is set) in
// append order.
func (p *Portable) TurnEvents(ctx context.Context, sessionID, turnID string) ([]store.TurnEvent, error) {
	return list(ctx, p, "turn events", ScanTurnEvent, turnEvents, sessionID, turnID, turnID)
}
