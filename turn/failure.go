package turn

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// Failure explains a turn that did not complete. Its cause is typed: the
// turn's outcome, the provider's class when a provider's failure ended it,
// the store's cause and the transport failure where they apply. Callers
// branch on those, never on the text.
type Failure struct {
	// Outcome is how the turn ended: Result.Exit, repeated so that a
	// failure read alone (a subagent's, a delegate result) says it.
	Outcome Exit `json:"outcome"`
	// Class is the provider's failure class (failover.Classes) when a
	// model call or answer ended the turn; "" for the turn's own failures
	// (Outcome persistence_failed, panic, busy, ...).
	Class failover.Class `json:"class,omitempty"`
	// Store is the store's cause of a persistence failure (Outcome
	// persistence_failed): locked, disk full, read-only, ...
	Store store.ErrorKind `json:"store,omitempty"`
	// Retryable says whether running the same turn again could succeed.
	Retryable bool   `json:"failure_retryable"`
	Provider  string `json:"provider,omitempty"`
	Model     string `json:"model,omitempty"`
	Status    int    `json:"status,omitempty"`
	// RetryAfter is the provider's own hint of when to come back (0 =
	// none); on the wire retry_after_ms.
	RetryAfter time.Duration `json:"-"`
	// Message is one sentence a person can act on.
	Message           string `json:"message"`
	BillingUnverified bool   `json:"billing_unverified,omitempty"`
	// Detail is the raw error text, for logs and --json.
	Detail string `json:"detail,omitempty"`
	// Transport is the connection-level failure behind a provider failure
	// that got no HTTP answer; Connect says why no connection could be made
	// (Transport connect), and BaseURL where: the endpoint the adapter
	// called, for a front end that words the failure with the setting that
	// names it. BaseURL is not on the wire (the message already says it).
	Transport llm.TransportKind `json:"transport,omitempty"`
	Connect   llm.ConnectCause  `json:"connect_cause,omitempty"`
	BaseURL   string            `json:"-"`
	// Bench is the cooldown on the provider's key behind a billing or auth
	// failure: the one this failure put on it, or (NotSent) the one that
	// kept the request from being sent at all. A front end may say how to
	// lift it early.
	Bench *KeyBench `json:"bench,omitempty"`
}

// KeyBench is a key's cooldown as a failure reports it.
type KeyBench struct {
	Until time.Time `json:"until"`
	// SetAt is when the key was benched; zero when unknown.
	SetAt time.Time `json:"set_at,omitzero"`
	// NotSent says no request was sent: every key was already benched.
	NotSent bool `json:"not_sent,omitempty"`
}

// Lasts is how long the bench lasts in all (0 when its start is unknown).
func (b *KeyBench) Lasts() time.Duration {
	if b.SetAt.IsZero() {
		return 0
	}
	return b.Until.Sub(b.SetAt).Round(time.Second)
}

// sentence says how long the bench lasts, for the failure's message.
func (b *KeyBench) sentence() string {
	at := b.Until.Local().Format(time.TimeOnly)
	if d := b.Lasts(); d > 0 {
		return fmt.Sprintf("The key is benched for %s, until %s; the bench survives restarts.", humanDuration(d), at)
	}
	return fmt.Sprintf("The key is benched until %s; the bench survives restarts.", at)
}

// humanDuration writes whole hours and minutes plainly ("1h", "2m").
func humanDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

// benches says whether a failure class puts a key on the bench (see
// failover.Pool.Failed); a rate limit's bench clears by itself and its
// failure already says when.
func benches(c failover.Class) bool {
	return c == failover.ClassBilling || c == failover.ClassAuth || c == failover.ClassAuthPermanent
}

// legacyNames are the names the turn's own endings had as failure
// classes before they became outcomes; failure_reason and cause.class
// carry them for one more release.
var legacyNames = map[Exit]string{
	ExitPersistenceFailed: "persistence", ExitPanic: "panic", ExitToolLoop: "tool_loop",
	ExitLeaseLost: "lease_lost", ExitBusy: "busy", ExitCompressionFailed: "compression_failed",
	ExitSessionFailed: "session", ExitCredentialsFailed: "credentials",
	ExitConfigurationFailed: "configuration", ExitSpendLimit: "spend_limit",
}

// Reason is the deprecated failure_reason: the provider's class, else the
// outcome's former class name, and for a persistence failure the store's
// cause after it ("persistence:locked"). For display and old scripts
// only; branch on Outcome, Class and Store.
func (f *Failure) Reason() string {
	if c := f.legacyCause(); c.Store != "" {
		return c.Class + ":" + string(c.Store)
	}
	return f.legacyCause().Class
}

// legacyCause is the deprecated cause: the provider's class, else the
// outcome's former class name; the store's cause for a persistence
// failure.
func (f *Failure) legacyCause() legacyCause {
	if f.Class != "" {
		return legacyCause{Class: string(f.Class)}
	}
	name, ok := legacyNames[f.Outcome]
	if !ok {
		name = string(f.Outcome)
	}
	if f.Outcome == ExitPersistenceFailed {
		return legacyCause{Class: name, Store: f.Store}
	}
	return legacyCause{Class: name}
}

// legacyCause is the deprecated "cause" object: Reason's two parts.
type legacyCause struct {
	Class string          `json:"class"`
	Store store.ErrorKind `json:"store,omitempty"`
}

// failureFields is Failure without its JSON methods.
type failureFields Failure

// failureWire is the JSON form: the fields, retry_after_ms, and for one
// release the deprecated cause object and failure_reason string.
type failureWire struct {
	*failureFields
	RetryAfterMS int64        `json:"retry_after_ms,omitempty"`
	Cause        *legacyCause `json:"cause,omitempty"`
	Reason       string       `json:"failure_reason,omitempty"`
}

// MarshalJSON writes the typed fields, then the deprecated aliases.
func (f Failure) MarshalJSON() ([]byte, error) {
	c := f.legacyCause()
	return json.Marshal(failureWire{(*failureFields)(&f), f.RetryAfter.Milliseconds(), &c, f.Reason()})
}

// UnmarshalJSON reads the typed fields MarshalJSON writes: a client of the
// gateway branches on the same values as the server. The deprecated
// aliases are not read back; they are derived.
func (f *Failure) UnmarshalJSON(b []byte) error {
	j := failureWire{failureFields: (*failureFields)(f)}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	f.RetryAfter = time.Duration(j.RetryAfterMS) * time.Millisecond
	return nil
}

// outcomeOf is the outcome of a turn that a provider's failure of class c
// ended, no recovery being left: the one place a provider class becomes a
// turn outcome. (A context overflow that compression could not fix ends
// compression_exhausted: that is the compressor's verdict, not the class's.)
func outcomeOf(c failover.Class) Exit {
	if c == failover.ClassCanceled {
		// The caller's own context ended: not the provider's failure.
		return ExitInterrupted
	}
	return ExitFailed
}

// Fail ends r with x and the failure that explains it (nil for none),
// keeping the failure's Outcome and the result's Exit one fact.
func (r *Result) Fail(x Exit, f *Failure) {
	r.Exit, r.Failure = x, f
	if f != nil {
		f.Outcome = x
	}
}

// StoreFailure is a persistence failure: doing says what could not be
// done ("Could not save your message"), the store's wording why and what
// helps.
func StoreFailure(doing string, err error) *Failure {
	kind := store.KindOf(err)
	f := &Failure{Outcome: ExitPersistenceFailed, Store: kind, Detail: err.Error()}
	msg := doing + ": " + store.Describe(err)
	switch kind {
	case store.KindLocked, store.KindDiskFull:
		f.Retryable = true
	case store.KindUnavailable:
		// Writes resume by themselves once the server is back.
		f.Retryable = true
		msg += " (no restart needed)"
	case store.KindLeaseLost:
		msg += ", so this one stopped"
	}
	f.Message = msg + "."
	return f
}

// persistFailure describes a failed durable write of what by its real
// cause.
func persistFailure(what string, err error) *Failure {
	return StoreFailure("Could not save "+what, err)
}

// PanicFailure is a recovered panic: a bug, with the session intact.
func PanicFailure(p any) *Failure {
	return &Failure{Outcome: ExitPanic,
		Message: fmt.Sprintf("Talaria hit an internal error (%v); the session is intact and the next turn can run. Please report this with the log.", p)}
}
