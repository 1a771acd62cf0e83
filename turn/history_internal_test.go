package turn

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/sqlite"
)

// loadSpy remembers the rows the store handed to the turn.
type loadSpy struct {
	store.Store
	loaded []store.Message
}

func (s *loadSpy) Messages(ctx context.Context, id string, q store.MessageQuery) ([]store.Message, error) {
	rows, err := s.Store.Messages(ctx, id, q)
	s.loaded = rows
	return rows, err
}

// The loaded history has room for the rows a turn appends: the user's
// message (and what follows it) goes into the array the store filled,
// instead of a copy of the whole session (16 MB at 50,000 rows).
func TestLoadedRowsNotCopiedOnAppend(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, t.TempDir()+"/state.db", sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sess := &store.Session{ID: "long"}
	if err := db.CreateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	l, err := db.AcquireLease(ctx, sess.ID, "test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		m := &store.Message{Message: llm.NewText(llm.RoleUser, fmt.Sprint("message ", i))}
		if i%2 == 1 {
			m.Message = llm.NewText(llm.RoleAssistant, fmt.Sprint("answer ", i))
		}
		if err := db.Append(ctx, l.Fence(), m); err != nil {
			t.Fatal(err)
		}
	}
	spy := &loadSpy{Store: db}
	e, err := New(Config{Store: spy, Routes: []Route{{Provider: nopProvider{}, Model: "m"}}})
	if err != nil {
		t.Fatal(err)
	}
	st := e.newState(Input{Session: sess, Fence: l.Fence(), TurnID: "t", Message: llm.NewText(llm.RoleUser, "go on")})
	if v := e.loadHistory(ctx, st); v != proceed {
		t.Fatalf("loadHistory: %v (%+v)", v, st.res)
	}
	if len(st.rows) != 301 || len(spy.loaded) != 300 {
		t.Fatalf("rows: %d in the turn, %d loaded; want 301 and 300", len(st.rows), len(spy.loaded))
	}
	if &st.rows[0] != &spy.loaded[0] {
		t.Error("the user's message was appended to a copy of the loaded rows")
	}
	if room := cap(st.rows) - len(st.rows); room < spareRows-1 {
		t.Errorf("room for %d more rows after the user's message, want %d", room, spareRows-1)
	}
}
