// Package store defines where sessions, messages, turn leases and credential
// cooldowns are kept, as one interface per consumer (SessionService for the
// agent and engine; Searcher, Memories, TurnEvents, ToolLedger, Cooldowns,
// SpendLedger, Tokens, Queue for the packages that use them). The SQL
// backends (store/sqlite, store/postgres) implement all of them: Store (the
// union of all but the two ledgers) and both ledgers; store/memstore keeps the session service and most of the rest in
// memory. Each interface has its contract suite in store/storetest.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/talaria-agent/talaria/llm"
)

// Session is one conversation.
type Session struct {
	ID       string
	Title    string
	Provider string
	Model    string
	// ParentID links a session to the one it continues (compression
	// rotation, Kind "") or to the session that spawned it (Kind
	// SessionSubagent, SessionReview); EndReason says why a session ended
	// ("" while live).
	ParentID  string
	EndReason string
	// Kind is "" for a conversation (or its compression continuation),
	// SessionSubagent for a delegated child, SessionReview for a
	// background review. Backends store it verbatim.
	Kind string
	// SystemPrompt is built once at creation and stored so its bytes never
	// change between turns, except at one deliberate rebuild when what it
	// was built from changes (SetSystemPrompt).
	SystemPrompt string
	// PromptStamp says what SystemPrompt was built from (the builder's
	// opaque stamp: tools offered, memory, instructions); "" for a session
	// from before stamps. Backends store it verbatim.
	PromptStamp string
	// PromptExtra is the session's own addition to its system prompt
	// (given at creation), kept so a rebuild keeps it.
	PromptExtra string
	Cwd         string
	StartedAt   time.Time
	UpdatedAt   time.Time
	EndedAt     time.Time // zero while live
	// Counters, accumulated with AddUsage.
	Usage    llm.Usage
	CostUSD  float64
	APICalls int64
	// MessageCount is computed on read (live and archived rows).
	MessageCount int64
	// Principal owns the session when it was created through the gateway
	// (the principal of the token used); "" for sessions made by the CLI.
	// It is fixed at creation.
	Principal string
}

// Live reports whether the session has not ended.
func (s *Session) Live() bool { return s.EndedAt.IsZero() }

// End reasons. A subagent or review session runs one turn and ends with
// that turn's exit ("completed", "interrupted", "failed", ...) as reason.
const (
	EndCompression = "compression" // continued in a child session
	EndUser        = "user"        // closed by the user
)

// Session kinds (Session.Kind).
const (
	SessionSubagent = "subagent" // a child running one delegated task
	SessionReview   = "review"   // a background review of its parent
)

// RowKind says how a stored message is shown and whether it is sent.
type RowKind string

const (
	RowNormal RowKind = ""
	// RowFailure is a failed-turn row: shown to people, never sent to a model.
	RowFailure RowKind = "failure"
	// RowInterrupted is an assistant answer cut short by an interrupt.
	RowInterrupted RowKind = "interrupted"
	// RowSummary is a compression summary: reference-only context.
	RowSummary RowKind = "summary"
	// RowNudge is an engine-written continuation prompt (role user).
	RowNudge RowKind = "nudge"
	// RowNotice is an engine-written notice (budget, guard).
	RowNotice RowKind = "notice"
	// RowUnsent is a user message whose turn was never admitted (the session
	// was busy): kept so nothing typed is lost, shown, never sent.
	RowUnsent RowKind = "unsent"
	// RowSteer is a user message that joined a running turn between its
	// tool results and its next call (steering); sent like any user row.
	RowSteer RowKind = "steer"
	// RowPressure is the context-pressure warning kept in the transcript,
	// so a session says it once until it goes back under: shown, never sent.
	RowPressure RowKind = "pressure"
	// RowPressureCleared says the session went back under the warning
	// ratio, so the warning may be said again: shown, never sent.
	RowPressureCleared RowKind = "pressure_cleared"
	// RowTodo is the session's plan (the todo tool's state), written when
	// it changes and carried into the compressed transcript: a synthetic
	// user row whose Content is the items as JSON and whose APIContent is
	// the block the model reads.
	RowTodo RowKind = "todo"
	// RowPromptRebuilt says the system prompt was rebuilt at this point
	// because the session's capabilities changed: shown, never sent.
	RowPromptRebuilt RowKind = "prompt_rebuilt"
)

// DisplayOnly reports whether rows of this kind are never sent to a model.
func (k RowKind) DisplayOnly() bool {
	return k == RowFailure || k == RowUnsent || k == RowPressure || k == RowPressureCleared || k == RowPromptRebuilt
}

// Message is one stored row of a session's transcript.
type Message struct {
	ID        int64  // assigned by the store
	SessionID string // set by Append from the fence
	Seq       int64  // position within the session, assigned by the store, only grows
	TurnID    string

	llm.Message

	// APIContent, when non-empty, is the text sent to the model in place of
	// the display content (for example the neutral placeholder of an empty
	// interrupted answer). It keeps replayed bytes stable.
	APIContent string
	Kind       RowKind
	// Synthetic marks rows the engine wrote on its own (nudges, notices,
	// failure rows, summaries); they are never taken as the user's task.
	Synthetic bool
	// Archived rows were compressed away: kept and searchable, never sent.
	Archived bool

	FinishReason llm.FinishReason
	Usage        llm.Usage
	Provider     string
	Model        string
	CreatedAt    time.Time
}

// Fence authorizes writes to a session: they commit only while Token is the
// session's current lease token, checked in the same transaction. A zero
// Token writes unfenced, which only the carrying of a user message whose turn
// was never admitted may use.
type Fence struct {
	SessionID string
	Token     int64
}

// Lease is the right to run a turn on a session.
type Lease struct {
	SessionID  string
	Holder     string
	Token      int64 // fencing token; only grows for a session
	AcquiredAt time.Time
	ExpiresAt  time.Time
}

// Fence returns the write fence this lease grants.
func (l Lease) Fence() Fence { return Fence{SessionID: l.SessionID, Token: l.Token} }

// Cooldown benches one credential of a provider until a time. A cooldown
// is keyed by provider, endpoint (BaseURL) and key: one server's refusal
// never benches another server's credential.
type Cooldown struct {
	Provider string
	BaseURL  string // the endpoint the key was refused at ("" when unknown)
	KeyID    string // a fingerprint of the key, never the key itself
	Until    time.Time
	Reason   string // failure class that caused it
	SetAt    time.Time
}

// ListOptions pages session listings (newest first by UpdatedAt).
type ListOptions struct {
	Limit  int // 0 means a backend default (50)
	Offset int
	// Principal, when set, lists only that principal's sessions.
	Principal string
}

// MessageQuery selects rows of one session, ordered by Seq.
type MessageQuery struct {
	IncludeArchived bool
	AfterSeq        int64 // only rows with Seq > AfterSeq
	Limit           int   // 0: all
	// Spare asks for room for this many more rows in the result's
	// capacity, for a caller that appends to it (a turn mirrors the rows
	// it writes): a long session is then not copied on the first append.
	Spare int
}

// SearchOptions narrows a full-text search.
type SearchOptions struct {
	SessionID string // "" searches all sessions
	Limit     int    // 0 means 20
	// Principal, when set, searches only that principal's sessions.
	Principal string
}

// SearchHit is one matching message with a highlighted snippet.
type SearchHit struct {
	SessionID string
	MessageID int64
	Seq       int64
	Role      llm.Role
	Snippet   string // the text around the match, see SnippetOpen
	CreatedAt time.Time
}

// What a SearchHit's Snippet looks like, in every backend.
const (
	SnippetOpen  = "«" // before each matched word
	SnippetClose = "»" // after it
	SnippetCut   = "…" // marks text cut off around the match
)

// Spend is what model calls cost, added to a session's counters: AddUsage's
// arguments as one value, so a write can carry them (AppendSpend).
type Spend struct {
	Usage    llm.Usage
	CostUSD  float64
	APICalls int64
}

// IsZero reports whether s adds nothing.
func (s Spend) IsZero() bool { return s == Spend{} }

// Sessions reads and writes session rows.
type Sessions interface {
	CreateSession(ctx context.Context, s *Session) error
	GetSession(ctx context.Context, id string) (*Session, error)
	ListSessions(ctx context.Context, opt ListOptions) ([]Session, error)
	// ChildSessions lists sessions whose ParentID is id, oldest first.
	ChildSessions(ctx context.Context, id string) ([]Session, error)
	SetTitle(ctx context.Context, id, title string) error
	EndSession(ctx context.Context, id, reason string) error
	AddUsage(ctx context.Context, id string, u llm.Usage, costUSD float64, apiCalls int64) error
	// DeleteSession removes a session with its messages and lease.
	DeleteSession(ctx context.Context, id string) error
	// SessionModels returns, for each of ids whose rows name one, the
	// provider/model pairs its messages came from (live and archived
	// rows), in order of first use. A separate read for listings, so
	// GetSession stays one row.
	SessionModels(ctx context.Context, ids []string) (map[string][]ModelUse, error)
}

// ModelUse is one provider/model a session's answers came from.
type ModelUse struct {
	Provider string
	Model    string
}

// Messages reads and writes transcript rows. Every write is fenced.
type Messages interface {
	// Append stores msgs in order, atomically, assigning ID, Seq, SessionID
	// and CreatedAt (when zero) on the given values.
	Append(ctx context.Context, f Fence, msgs ...*Message) error
	// AppendSpend is Append that also adds sp to the session's counters
	// (as AddUsage does) in the same transaction: rows and spend commit
	// together or not at all, so a refused write (stale fence, ended
	// session) adds no usage either. A turn records each answer's cost
	// with the answer's row: one commit instead of two.
	AppendSpend(ctx context.Context, f Fence, sp Spend, msgs ...*Message) error
	// Replace atomically archives the session's live rows with Seq <=
	// throughSeq and appends msgs (the compressed transcript).
	Replace(ctx context.Context, f Fence, throughSeq int64, msgs ...*Message) error
	// Delete removes rows by ID (settling length-continuation scaffolding).
	Delete(ctx context.Context, f Fence, ids ...int64) error
	// SetSystemPrompt replaces the session's SystemPrompt and PromptStamp
	// and appends msgs, in one transaction fenced by f, only while the
	// stored stamp is still from: of two writers that saw the same stamp
	// and the same change, the later gets ErrStampChanged and writes
	// nothing, so one change rebuilds the prompt once.
	SetSystemPrompt(ctx context.Context, f Fence, from, prompt, stamp string, msgs ...*Message) error
	Messages(ctx context.Context, sessionID string, q MessageQuery) ([]Message, error)
}

// Searcher finds messages by their words, across sessions: what `talaria
// sessions search` and the API's search read. It is not part of
// SessionService: no turn searches.
type Searcher interface {
	Search(ctx context.Context, query string, opt SearchOptions) ([]SearchHit, error)
}

// Leases grants the per-session turn lease.
type Leases interface {
	// AcquireLease takes the session's lease for holder, or returns a
	// *LeaseHeldError when another holder's lease has not expired. It does
	// not wait. A holder re-acquiring its own lease gets a new token.
	AcquireLease(ctx context.Context, sessionID, holder string, ttl time.Duration) (Lease, error)
	// AcquireLeaseAppend takes the lease as AcquireLease does and, in the
	// same transaction, appends msgs under the new lease's fence (a turn's
	// first rows: the user's message): one commit instead of two, and a
	// crash leaves either both or neither. It takes the lease of a live
	// session only: on an ended one it fails wrapping ErrEnded and changes
	// nothing. A held lease is reported (*LeaseHeldError) before an ended
	// session, an unknown session first of all (ErrNotFound). With no msgs
	// it is AcquireLease that refuses ended sessions.
	AcquireLeaseAppend(ctx context.Context, sessionID, holder string, ttl time.Duration, msgs ...*Message) (Lease, error)
	// RefreshLease extends l; an error wrapping ErrLeaseLost means it was
	// taken over or released.
	RefreshLease(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	// ReleaseLease gives l up; releasing a lost lease is not an error.
	ReleaseLease(ctx context.Context, l Lease) error
}

// Cooldowns persists credential cooldowns so they survive restarts.
type Cooldowns interface {
	SetCooldown(ctx context.Context, c Cooldown) error
	// Cooldowns lists a provider's cooldowns that end after now, of every
	// endpoint (callers filter by Cooldown.BaseURL).
	Cooldowns(ctx context.Context, provider string, now time.Time) ([]Cooldown, error)
	// ClearCooldown ends a key's cooldowns at every endpoint.
	ClearCooldown(ctx context.Context, provider, keyID string) error
}

// SpendLedger keeps each principal's priced spend per UTC day, so that a
// daily spending limit holds across restarts and across the nodes of one
// database. It is not part of Store: only the gateway consumes it, and
// every backend in this module implements it (the storetest "Spend"
// group checks that).
type SpendLedger interface {
	// AddSpend adds usd (> 0) to principal's spend of day ("2006-01-02").
	AddSpend(ctx context.Context, principal, day string, usd float64) error
	// Spend is principal's spend of day; 0 when nothing was recorded.
	Spend(ctx context.Context, principal, day string) (float64, error)
}

// Token is an API bearer token of the gateway. Only a hash of the secret is
// stored; the secret itself is shown once, when it is created.
type Token struct {
	ID        string // assigned by CreateToken when empty
	Name      string
	Principal string // the tenant its requests act as
	// Hash is the hex SHA-256 of the secret; unique among all tokens.
	Hash string
	// Scope is what the token may do beyond its principal's sessions:
	// ScopeAdmin may read /metrics; "" is an ordinary token.
	Scope string
	// Managed marks a token given by configuration (serve.tokens): the
	// configuration is its source of truth, so serve revokes it when its
	// secret changes or its entry is removed.
	Managed   bool
	CreatedAt time.Time
	RevokedAt time.Time // zero while valid
}

// WriteChecker is a store that can prove a write commits (a full disk or a
// read-only database fails it); /readyz uses it when the store has it.
type WriteChecker interface {
	CheckWrite(ctx context.Context) error
}

// ScopeAdmin is the scope of an operator's token.
const ScopeAdmin = "admin"

// Token errors, wrapped by CreateToken so callers can tell them apart.
var (
	// ErrTokenInvalid: an empty or whitespace name or principal, or an
	// unknown scope.
	ErrTokenInvalid = errors.New("invalid token")
	// ErrTokenNameTaken: a valid token already has this name.
	ErrTokenNameTaken = errors.New("a valid token already has this name")
)

// Check refuses a token that names no one: an empty or whitespace name or
// principal (an empty principal must never stand for "every principal").
func (t *Token) Check() error {
	if strings.TrimSpace(t.Name) == "" || t.Name != strings.TrimSpace(t.Name) {
		return fmt.Errorf("%w: the name must not be empty or start or end with spaces", ErrTokenInvalid)
	}
	if strings.TrimSpace(t.Principal) == "" || t.Principal != strings.TrimSpace(t.Principal) {
		return fmt.Errorf("%w: the principal must not be empty or start or end with spaces", ErrTokenInvalid)
	}
	if t.Scope != "" && t.Scope != ScopeAdmin {
		return fmt.Errorf("%w: scope %q: use %q or none", ErrTokenInvalid, t.Scope, ScopeAdmin)
	}
	return nil
}

// Prepare readies t for CreateToken in every backend alike: it must have a
// hash and pass Check, and an empty CreatedAt (with now) or ID is filled.
func (t *Token) Prepare(now time.Time) error {
	if t.Hash == "" {
		return errors.New("token has no hash")
	}
	if err := t.Check(); err != nil {
		return err
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now
	}
	if t.ID == "" {
		t.ID = "tok_" + NewID(t.CreatedAt)
	}
	return nil
}

// Tokens keeps the gateway's bearer tokens, so every node sharing the
// database accepts the same ones.
type Tokens interface {
	// CreateToken stores t, filling ID and CreatedAt when empty. A token
	// failing Check wraps ErrTokenInvalid; a valid token whose name another
	// valid token has wraps ErrTokenNameTaken.
	CreateToken(ctx context.Context, t *Token) error
	// TokenByHash returns the valid (not revoked) token with this hash, or
	// an error wrapping ErrNotFound.
	TokenByHash(ctx context.Context, hash string) (*Token, error)
	// ListTokens lists every token, revoked ones included, oldest first.
	ListTokens(ctx context.Context) ([]Token, error)
	// RevokeToken revokes a token by ID; an unknown ID wraps ErrNotFound,
	// revoking twice is not an error.
	RevokeToken(ctx context.Context, id string) error
}

// QueuedMessage is a message the gateway accepted for a session and has not
// finished running: the durable per-session FIFO that survives a restart.
type QueuedMessage struct {
	ID        int64 // assigned by Enqueue; orders the queue
	SessionID string
	TurnID    string // the id the turn will run under, known to the client
	Text      string
	CreatedAt time.Time
	// StartedAt is set by MarkStarted when its turn begins; a row still
	// here with StartedAt set after a restart is a turn that was cut off.
	StartedAt time.Time
}

// Queue is the gateway's durable per-session message queue.
type Queue interface {
	// Enqueue appends q to its session's queue, assigning ID (and
	// CreatedAt when zero). An unknown session wraps ErrNotFound.
	Enqueue(ctx context.Context, q *QueuedMessage) error
	// Queued lists a session's queued messages in FIFO order (ID
	// ascending), started ones included; sessionID "" lists every session's.
	Queued(ctx context.Context, sessionID string) ([]QueuedMessage, error)
	// MarkStarted records that the message's turn began.
	MarkStarted(ctx context.Context, id int64, at time.Time) error
	// Dequeue removes a message; removing a missing one is not an error.
	// Deleting a session removes its queue.
	Dequeue(ctx context.Context, id int64) error
}

// MemoryEntry is one durable fact kept for a workspace (and optionally one
// user): preferences, conventions, decisions worth knowing next session.
type MemoryEntry struct {
	ID        int64  // assigned by the store, only grows
	Workspace string // the absolute workspace directory it belongs to
	// User is "" for an entry every user of the workspace sees.
	User string
	Text string
	// SourceSession is the session that wrote it ("" when added by hand).
	SourceSession string
	CreatedAt     time.Time
}

// MemoryQuery selects the memory of one workspace. With User "" it selects
// the shared entries only; with a user, the shared entries and that user's.
type MemoryQuery struct {
	Workspace string
	User      string
}

// Memories keeps memory entries.
type Memories interface {
	// AddMemory stores e, assigning ID (and CreatedAt when zero) on it.
	AddMemory(ctx context.Context, e *MemoryEntry) error
	// Memories lists the entries q selects, oldest first (by ID).
	Memories(ctx context.Context, q MemoryQuery) ([]MemoryEntry, error)
	// DeleteMemory removes entry id of workspace; an id that is not an
	// entry of that workspace is ErrNotFound.
	DeleteMemory(ctx context.Context, workspace string, id int64) error
	// ClearMemory removes exactly the entries Memories(q) lists and
	// returns how many.
	ClearMemory(ctx context.Context, q MemoryQuery) (int64, error)
}

// TurnEvent is one recorded step of a turn — the turn itself, a model call
// or failed attempt (with the wait before a retry), a tool call, a
// compression pass, a guard firing, a fallback — kept so `talaria trace`
// can show what happened and what it cost without a telemetry collector.
// Events are display-only: never part of a transcript, never sent to a
// model.
type TurnEvent struct {
	SessionID string // the session the turn started in
	TurnID    string
	Seq       int    // order within the turn, from 1
	Kind      string // "turn", "call", "call_failed", "tool", "compression", "guard", "fallback", ...
	Name      string // the model, tool or guard
	Start     time.Time
	Duration  time.Duration
	CostUSD   float64
	// Detail is a JSON object with the kind's own fields (tokens, class,
	// decision, wait, outcome, ...); backends store it verbatim.
	Detail string
}

// TurnEvents keeps each turn's event log. Writes are not fenced: a turn
// that lost its lease still records what it did, and an ended session
// still accepts its last turn's events.
type TurnEvents interface {
	// AppendTurnEvents stores evs atomically. The session must exist
	// (else KindNotFound); (SessionID, TurnID, Seq) is unique (a duplicate
	// fails the call and none of its events is stored).
	AppendTurnEvents(ctx context.Context, evs ...TurnEvent) error
	// TurnEvents lists a session's events, turnID "" for every turn, in
	// the order they were appended. DeleteSession removes them.
	TurnEvents(ctx context.Context, sessionID, turnID string) ([]TurnEvent, error)
}

// SessionService is what running turns needs from persistence: sessions,
// their fenced transcripts and the per-session turn lease. The agent takes
// it (agent.Config.Store) and the engine a subset of it (turn.Store); a
// backend that provides only this (store/memstore, for instance) runs real
// turns. storetest.RunCore is its contract.
//
// Everything else is declared per consumer and found, where a consumer
// can do without it, by a type assertion on the same value: Memories (the
// agent's workspace memory, required only when memory is on), ToolLedger
// (the engine's tool-call ledger), SpendLedger and WriteChecker (the
// gateway). A wrapper of a store therefore forwards those it has.
type SessionService interface {
	Sessions
	Messages
	Leases
}

// Store is everything the SQL backends provide: the union of the
// per-consumer interfaces that storeopen returns, the CLI and the gateway
// use, and storetest.Run checks. Take a narrower one where you can.
type Store interface {
	SessionService
	Searcher
	Cooldowns
	Tokens
	Queue
	Memories
	TurnEvents
	Close() error
}
