package storetest

import (
	"testing"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

var lifecycleCases = []testCase[Closable]{
	{"ClosedStore", testClosed},
}

func testClosed(t *testing.T, s Closable) {
	a := newSession(t, s)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	c := ctx(t)
	_, err := s.GetSession(c, a.ID)
	wantKind(t, "GetSession after Close", err, nil, store.KindClosed)
	err = s.Append(c, store.Fence{SessionID: a.ID}, text(llm.RoleUser, "x"))
	wantKind(t, "Append after Close", err, nil, store.KindClosed)
}
