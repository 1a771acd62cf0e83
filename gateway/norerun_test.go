package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// fullDisk is the real store with every write after full is set failing
// the way SQLite does on a full disk, until it is cleared (space freed).
type fullDisk struct {
	Store
	full atomic.Bool
}

var errDiskFull = &store.Error{Op: "append", Kind: store.KindDiskFull, Err: errors.New("database or disk is full")}

func (d *fullDisk) Append(ctx context.Context, f store.Fence, msgs ...*store.Message) error {
	if d.full.Load() {
		return errDiskFull
	}
	return d.Store.Append(ctx, f, msgs...)
}

func (d *fullDisk) AppendSpend(ctx context.Context, f store.Fence, sp store.Spend, msgs ...*store.Message) error {
	if d.full.Load() {
		return errDiskFull
	}
	return d.Store.AppendSpend(ctx, f, sp, msgs...)
}

func (d *fullDisk) Dequeue(ctx context.Context, id int64) error {
	if d.full.Load() {
		return errDiskFull
	}
	return d.Store.Dequeue(ctx, id)
}

func (d *fullDisk) MarkStarted(ctx context.Context, id int64, at time.Time) error {
	if d.full.Load() {
		return errDiskFull
	}
	return d.Store.MarkStarted(ctx, id, at)
}

// A turn whose writes failed on a full disk (the client was told
// persistence_failed) is not run again once space is back: its user row
// is stored once and the model is not asked again for it; the next
// message runs.
func TestDiskFullTurnNotRerun(t *testing.T) {
	disk := &fullDisk{}
	h := newHarness(t, harnessOptions{configure: func(c *Config) {
		disk.Store = c.Store
		c.Store = disk
	}})
	var calls atomic.Int32
	h.env.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
		if calls.Add(1) == 1 {
			disk.full.Store(true) // the user row is stored; what follows is not
		}
		return fakellm.Text("ok")
	})
	sid := h.session(h.token)
	s := h.open(h.token, sid, 0)
	defer s.close()
	first := h.send(h.token, sid, "first")
	s.until(t, 20*time.Second, finished(first))
	disk.full.Store(false)

	second := h.send(h.token, sid, "second")
	s.until(t, 20*time.Second, finished(second))

	rows, err := disk.Store.Messages(context.Background(), sid, store.MessageQuery{IncludeArchived: true})
	if err != nil {
		t.Fatal(err)
	}
	users := map[string]int{}
	for _, r := range rows {
		if r.Role == llm.RoleUser && !r.Synthetic {
			users[r.TurnID]++
		}
	}
	if users[first] != 1 || users[second] != 1 {
		t.Errorf("user rows per turn = %v, want one for %s and one for %s", users, first, second)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("the model was asked %d times, want 2 (the failed turn ran again)", n)
	}
}

func (d *fullDisk) CheckWrite(ctx context.Context) error {
	if d.full.Load() {
		return errDiskFull
	}
	return d.Store.(store.WriteChecker).CheckWrite(ctx)
}

// /readyz says not ready while writes fail (a full disk), without naming
// the database, and ready again once they commit.
func TestReadyzWriteCheck(t *testing.T) {
	disk := &fullDisk{}
	h := newHarness(t, harnessOptions{configure: func(c *Config) {
		disk.Store = c.Store
		c.Store = disk
	}})
	ready := func() (int, string) {
		resp, err := http.Get(h.srv.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := ready(); code != 200 {
		t.Fatalf("readyz = %d %s", code, body)
	}
	disk.full.Store(true)
	var body string
	if !testenv.Eventually(10*time.Second, func() bool { var code int; code, body = ready(); return code == 503 }) {
		t.Fatalf("readyz stays ready while every write fails: %s", body)
	}
	if strings.Contains(body, "/") || strings.Contains(body, ".db") {
		t.Errorf("readyz names the database: %s", body)
	}
	disk.full.Store(false)
	if !testenv.Eventually(10*time.Second, func() bool { code, _ := ready(); return code == 200 }) {
		t.Fatal("readyz did not come back once writes commit")
	}
}
