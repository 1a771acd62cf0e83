package turn_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// The wire form keeps failure_reason as scripts know it ("rate_limit",
// "persistence:locked") and reads back into the same typed cause, for every
// class and every store cause: a gateway client branches on what the
// server's engine set.
// A failure written by an older server (failure_reason only) reads into
// the same typed cause; one with both reads the object.
func TestFailureJSONReadsReasonAlone(t *testing.T) {
	for _, tc := range []struct {
		wire  string
		class failover.Class
		kind  store.ErrorKind
	}{
		{`{"failure_reason":"persistence:locked","message":"m"}`, failover.ClassPersistence, store.KindLocked},
		{`{"failure_reason":"rate_limit","message":"m"}`, failover.ClassRateLimit, ""},
		{`{"cause":{"class":"persistence","store":"disk_full"},"failure_reason":"persistence:locked"}`, failover.ClassPersistence, store.KindDiskFull},
	} {
		var f turn.Failure
		if err := json.Unmarshal([]byte(tc.wire), &f); err != nil {
			t.Fatal(err)
		}
		if f.Class != tc.class || f.Store != tc.kind {
			t.Errorf("%s: read class %q store %q, want %q %q", tc.wire, f.Class, f.Store, tc.class, tc.kind)
		}
	}
}

func TestFailureJSONRoundTrip(t *testing.T) {
	var cases []turn.Failure
	for _, c := range failover.Classes() {
		cases = append(cases, turn.Failure{Class: c, Retryable: true, Provider: "p", Model: "m", Message: "say why"})
	}
	for _, k := range []store.ErrorKind{store.KindLocked, store.KindDiskFull, store.KindCorrupt, store.KindReadOnly,
		store.KindLeaseLost, store.KindEnded, store.KindUnavailable, store.KindOther} {
		cases = append(cases, turn.Failure{Class: failover.ClassPersistence, Store: k, Message: "could not save"})
	}
	cases = append(cases, turn.Failure{Class: failover.ClassTimeout, Transport: llm.TransportConnect, Connect: llm.ConnectRefused,
		Provider: "local", Detail: "dial tcp: connect: connection refused"})
	for _, f := range cases {
		t.Run(f.Reason(), func(t *testing.T) {
			b, err := json.Marshal(turn.Result{Exit: turn.ExitFailed, Failure: &f})
			if err != nil {
				t.Fatal(err)
			}
			var wire struct {
				Failure map[string]any `json:"failure"`
			}
			if err := json.Unmarshal(b, &wire); err != nil {
				t.Fatal(err)
			}
			want := string(f.Class)
			if f.Store != "" {
				want += ":" + string(f.Store)
			}
			if wire.Failure["failure_reason"] != want || wire.Failure["failure_retryable"] != f.Retryable {
				t.Errorf("wire form %s; want failure_reason %q", b, want)
			}
			// The typed cause travels as an object: no client splits the string.
			cause, _ := wire.Failure["cause"].(map[string]any)
			if cause["class"] != string(f.Class) || (f.Store != "" && cause["store"] != string(f.Store)) ||
				(f.Store == "" && cause["store"] != nil) {
				t.Errorf("wire cause %v; want class %q store %q", wire.Failure["cause"], f.Class, f.Store)
			}
			for _, gone := range []string{"Class", "Store", "class"} {
				if _, ok := wire.Failure[gone]; ok {
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
			if f.Class != failover.ClassPersistence || f.Store != tt.kind || f.Retryable != tt.retryable {
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
