package turn

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// Failure explains a turn that did not complete. Its cause is typed: the
// class, and where they apply the store's cause and the transport failure.
// Callers branch on those, never on the text.
type Failure struct {
	// Class is the failure class: a provider's (failover.Classes) or a
	// turn class (failover.TurnClasses). On the wire it is cause.class
	// (and failure_reason, Reason, for one more release).
	Class failover.Class `json:"-"`
	// Store is the store's cause of a persistence failure (Class
	// persistence): locked, disk full, read-only, ... (cause.store)
	Store store.ErrorKind `json:"-"`
	// Retryable says whether running the same turn again could succeed.
	Retryable bool   `json:"failure_retryable"`
	Provider  string `json:"provider,omitempty"`
	Model     string `json:"model,omitempty"`
	Status    int    `json:"status,omitempty"`
	// Message is one sentence a person can act on.
	Message           string `json:"message"`
	BillingUnverified bool   `json:"billing_unverified,omitempty"`
	// Detail is the raw error text, for logs and --json.
	Detail string `json:"detail,omitempty"`
	// Transport is the connection-level failure behind a provider failure
	// that got no HTTP answer; Connect says why no connection could be made
	// (Transport connect).
	Transport llm.TransportKind `json:"transport,omitempty"`
	Connect   llm.ConnectCause  `json:"connect_cause,omitempty"`
	// Bench is the cooldown on the provider's key behind a billing or auth
	// failure: the one this failure put on it, or (NotSent) the one that
	// kept the request from being sent at all. A front end says how to lift
	// it early (the CLI: `talaria keys reset PROVIDER`).
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

// Reason is the failure_reason scripts read: the class, and for a
// persistence failure the store's cause after it ("persistence:locked").
func (f *Failure) Reason() string {
	if f.Class == failover.ClassPersistence && f.Store != "" {
		return string(f.Class) + ":" + string(f.Store)
	}
	return string(f.Class)
}

// Cause is a failure's typed cause as it travels in JSON ("cause"): the
// class, and for a persistence failure the store's cause.
type Cause struct {
	Class failover.Class  `json:"class"`
	Store store.ErrorKind `json:"store,omitempty"`
}

// failureFields is Failure without its JSON methods.
type failureFields Failure

// failureWire is the JSON form: the typed cause, and failure_reason, its
// "class:kind" string, kept for scripts for one release (deprecated).
type failureWire struct {
	Cause  *Cause `json:"cause"`
	Reason string `json:"failure_reason"`
	*failureFields
}

// MarshalJSON writes the typed cause (and failure_reason), then the fields.
func (f Failure) MarshalJSON() ([]byte, error) {
	return json.Marshal(failureWire{&Cause{Class: f.Class, Store: f.Store}, f.Reason(), (*failureFields)(&f)})
}

// UnmarshalJSON reads what MarshalJSON writes, the typed cause included:
// a client of the gateway branches on the same fields as the server. A
// writer that sent only failure_reason (an older server) is read too.
func (f *Failure) UnmarshalJSON(b []byte) error {
	j := failureWire{failureFields: (*failureFields)(f)}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if j.Cause != nil {
		f.Class, f.Store = j.Cause.Class, j.Cause.Store
		return nil
	}
	class, kind, _ := strings.Cut(j.Reason, ":")
	f.Class, f.Store = failover.Class(class), ""
	if f.Class == failover.ClassPersistence {
		f.Store = store.ErrorKind(kind)
	}
	return nil
}

// StoreFailure is a persistence failure: doing says what could not be
// done ("Could not save your message"), the store's wording why and what
// helps.
func StoreFailure(doing string, err error) *Failure {
	kind := store.KindOf(err)
	f := &Failure{Class: failover.ClassPersistence, Store: kind, Detail: err.Error()}
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
	return &Failure{Class: failover.ClassPanic,
		Message: fmt.Sprintf("Talaria hit an internal error (%v); the session is intact and the next turn can run. Please report this with the log.", p)}
}
