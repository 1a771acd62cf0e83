package turn_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// The failure travels as typed fields (outcome, class, store,
// retry_after_ms) and reads back into the same Failure, for every provider
// class, every turn outcome and every store cause: a gateway client
// branches on what the server's engine set. failure_reason and cause stay
// on the wire for one release, derived, in their old spelling
// ("rate_limit", "persistence:locked", "session").
func TestFailureJSONRoundTrip(t *testing.T) {
	type tc struct {
		f      turn.Failure
		reason string // the deprecated failure_reason
	}
	var cases []tc
	for _, c := range failover.Classes() {
		cases = append(cases, tc{turn.Failure{Outcome: turn.ExitFailed, Class: c, Retryable: true, Provider: "p", Model: "m",
			Status: 429, RetryAfter: 1500 * time.Millisecond, Message: "say why"}, string(c)})
	}
	for _, k := range []store.ErrorKind{store.KindLocked, store.KindDiskFull, store.KindCorrupt, store.KindReadOnly,
		store.KindLeaseLost, store.KindEnded, store.KindUnavailable, store.KindOther} {
		cases = append(cases, tc{turn.Failure{Outcome: turn.ExitPersistenceFailed, Store: k, Message: "could not save"},
			"persistence:" + string(k)})
	}
	for x, reason := range map[turn.Exit]string{
		turn.ExitPanic: "panic", turn.ExitToolLoop: "tool_loop", turn.ExitLeaseLost: "lease_lost", turn.ExitBusy: "busy",
		turn.ExitCompressionFailed: "compression_failed", turn.ExitSessionFailed: "session",
		turn.ExitCredentialsFailed: "credentials", turn.ExitConfigurationFailed: "configuration",
		turn.ExitSpendLimit: "spend_limit", turn.ExitHandoffLimit: "handoff_limit",
	} {
		cases = append(cases, tc{turn.Failure{Outcome: x, Message: "m"}, reason})
	}
	cases = append(cases,
		tc{turn.Failure{Outcome: turn.ExitCompressionExhausted, Class: failover.ClassContextOverflow, Provider: "p"}, "context_overflow"},
		tc{turn.Failure{Outcome: turn.ExitFailed, Class: failover.ClassTimeout, Transport: llm.TransportConnect, Connect: llm.ConnectRefused,
			Provider: "local", Detail: "dial tcp: connect: connection refused"}, "timeout"})
	for _, c := range cases {
		f := c.f
		t.Run(c.reason, func(t *testing.T) {
			b, err := json.Marshal(turn.Result{Exit: f.Outcome, Failure: &f})
			if err != nil {
				t.Fatal(err)
			}
			var wire struct {
				Failure map[string]any `json:"failure"`
			}
			if err := json.Unmarshal(b, &wire); err != nil {
				t.Fatal(err)
			}
			w := wire.Failure
			if w["outcome"] != string(f.Outcome) || (f.Class != "") != (w["class"] == string(f.Class)) ||
				(f.Class == "") != (w["class"] == nil) || (f.Store != "") != (w["store"] == string(f.Store)) {
				t.Errorf("typed fields on the wire: %s", b)
			}
			if ms, _ := w["retry_after_ms"].(float64); int64(ms) != f.RetryAfter.Milliseconds() {
				t.Errorf("retry_after_ms %v, want %d", w["retry_after_ms"], f.RetryAfter.Milliseconds())
			}
			// The deprecated aliases, in their old spelling.
			name, kind, _ := strings.Cut(c.reason, ":")
			cause, _ := w["cause"].(map[string]any)
			if w["failure_reason"] != c.reason || cause["class"] != name || (kind != "") != (cause["store"] == kind) ||
				w["failure_retryable"] != f.Retryable {
				t.Errorf("deprecated fields: %s; want failure_reason %q", b, c.reason)
			}
			if f.Reason() != c.reason {
				t.Errorf("Reason() = %q, want %q", f.Reason(), c.reason)
			}
			for _, gone := range []string{"Class", "Store", "Outcome", "RetryAfter"} {
				if _, ok := w[gone]; ok {
					t.Errorf("wire form carries %q: %s", gone, b)
				}
			}
			var back turn.Result
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if back.Failure == nil || *back.Failure != f {
				t.Errorf("round trip: got %+v, want %+v", back.Failure, f)
			}
		})
	}
}

// The deprecated strings are written, never read: a failure carrying only
// failure_reason and cause decodes to no class and no outcome, so no
// client branches on a split string.
func TestFailureJSONIgnoresAliases(t *testing.T) {
	var f turn.Failure
	if err := json.Unmarshal([]byte(`{"failure_reason":"persistence:locked","cause":{"class":"persistence","store":"locked"},"message":"m"}`), &f); err != nil {
		t.Fatal(err)
	}
	if f.Class != "" || f.Outcome != "" || f.Store != "" || f.Message != "m" {
		t.Errorf("decoded %+v from the aliases alone", f)
	}
}

// A failed durable write is typed by the store's cause and worded by the
// store's words (one wording, store.Describe), naming the database.
func TestStoreFailure(t *testing.T) {
	tests := []struct {
		kind      store.ErrorKind
		retryable bool
		says      []string
	}{
		{store.KindLocked, true, []string{"Could not save your message: the database /d/state.db is locked by another process", "wait for it"}},
		{store.KindDiskFull, true, []string{"the disk holding the database /d/state.db is full"}},
		{store.KindCorrupt, false, []string{"is damaged", "mv /d/state.db /d/state.db.damaged"}},
		{store.KindReadOnly, false, []string{"is read-only", "permissions"}},
		{store.KindUnavailable, true, []string{"the database server /d/state.db cannot be reached", "no restart needed"}},
		{store.KindLeaseLost, false, []string{"another process took over this session's turn, so this one stopped"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			err := fmt.Errorf("append: %w", &store.Error{Op: "append", Kind: tt.kind, Path: "/d/state.db", Err: errors.New("cause")})
			f := turn.StoreFailure("Could not save your message", err)
			if f.Outcome != turn.ExitPersistenceFailed || f.Class != "" || f.Store != tt.kind || f.Retryable != tt.retryable {
				t.Errorf("failure %+v", f)
			}
			if f.Reason() != "persistence:"+string(tt.kind) {
				t.Errorf("reason %q", f.Reason())
			}
			for _, w := range tt.says {
				if !strings.Contains(f.Message, w) {
					t.Errorf("message %q lacks %q", f.Message, w)
				}
			}
		})
	}
}
