//go:build unix

package hostile

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/sqlite"
)

// A flood of expensive searches from one principal (many concurrent
// queries of 8 words found in every message of a large database) does not
// delay another principal's session list: its median latency during the
// flood stays within a generous ratio of its median without the flood,
// measured in the same run.
func TestSearchFloodDoesNotDelayOthers(t *testing.T) {
	home := t.TempDir()
	seedSearchable(t, filepath.Join(home, "state.db"), "eve", 20, 300)
	s := startServe(t, options{Home: home, Principals: []string{"eve", "bob"}})
	eve, bob := s.Tokens["eve"], s.Tokens["bob"]
	for range 3 {
		s.newSession(bob)
	}
	list := func() time.Duration {
		start := time.Now()
		if code, b := s.do("GET", "v1/sessions", bob, ""); code != 200 {
			t.Fatalf("bob lists: %d %s", code, b)
		}
		return time.Since(start)
	}
	median := func(n int) time.Duration {
		d := make([]time.Duration, n)
		for i := range d {
			d[i] = list()
		}
		slices.Sort(d)
		return d[n/2]
	}
	median(5) // warm up
	quiet := median(21)

	q := "/v1/search?limit=200&q=" + url.QueryEscape("alpha bravo charlie delta echo foxtrot golf hotel")
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 48 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				resp, err := s.request(ctx, "GET", q, eve, "")
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					// A refused search costs the server nothing; the
					// pause keeps this client's own loop from taking
					// the machine's CPU from the server.
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond) // let the flood fill the server
	flooded := median(21)
	stop()
	wg.Wait()
	t.Logf("bob's list: median %v without the flood, %v during it", quiet, flooded)
	if flooded > 60*quiet {
		t.Fatalf("eve's search flood slowed bob's list %.0fx (%v → %v)", float64(flooded)/float64(quiet), quiet, flooded)
	}
}

// seedSearchable writes sessions×perSession messages of principal into a
// new database at path, each holding the 8 words the flood searches for.
func seedSearchable(t *testing.T, path, principal string, sessions, perSession int) {
	t.Helper()
	ctx := t.Context()
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := range sessions {
		sess := &store.Session{Principal: principal, Provider: "openai", Model: "m", Title: fmt.Sprintf("seed %d", i)}
		if err := st.CreateSession(ctx, sess); err != nil {
			t.Fatal(err)
		}
		rows := make([]*store.Message, perSession)
		for j := range rows {
			text := fmt.Sprintf("%s alpha bravo charlie delta echo foxtrot golf hotel %d %d", strings.Repeat("lorem ipsum dolor sit amet alpha ", 120), i, j)
			rows[j] = &store.Message{Message: llm.NewText(llm.RoleUser, text)}
		}
		if err := st.Append(ctx, store.Fence{SessionID: sess.ID}, rows...); err != nil {
			t.Fatal(err)
		}
	}
}
