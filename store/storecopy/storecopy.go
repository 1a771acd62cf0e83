// Package storecopy copies one Talaria database into another (SQLite to
// PostgreSQL for scaling out): every session with its lineage link, every
// message with its exact bytes and seqs, every cooldown; then it verifies
// counts and a checksum of the message bytes read back from the target.
package storecopy

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"sort"

	"github.com/talaria-agent/talaria/store"
)

// Source is a database to copy from.
type Source interface {
	store.Sessions
	Messages(ctx context.Context, sessionID string, q store.MessageQuery) ([]store.Message, error)
	AllCooldowns(ctx context.Context) ([]store.Cooldown, error)
	LastSeq(ctx context.Context, id string) (int64, error)
	ListTokens(ctx context.Context) ([]store.Token, error)
	AllMemories(ctx context.Context) ([]store.MemoryEntry, error)
	TurnEvents(ctx context.Context, sessionID, turnID string) ([]store.TurnEvent, error)
}

// Target is a database to copy into.
type Target interface {
	Source
	store.Cooldowns
	CreateToken(ctx context.Context, t *store.Token) error
	ImportSession(ctx context.Context, sess store.Session, lastSeq int64, msgs []store.Message) (bool, error)
	AddMemory(ctx context.Context, e *store.MemoryEntry) error
	AppendTurnEvents(ctx context.Context, evs ...store.TurnEvent) error
}

// Options tune Copy.
type Options struct {
	// Append allows a target that already holds sessions the source does
	// not have (another installation's); without it such a target is
	// refused. Sessions the source has are always compared, never
	// overwritten, so a rerun after a completed or interrupted copy
	// finishes it.
	Append bool
	// Progress, when set, is told after each session.
	Progress func(done, total int)
}

// Report is what was copied and verified.
type Report struct {
	Sessions  int   `json:"sessions"`  // in the source
	Copied    int   `json:"copied"`    // written now
	Skipped   int   `json:"skipped"`   // already in the target, identical
	Messages  int64 `json:"messages"`  // rows in the source, archived included
	Lineage   int   `json:"lineage"`   // sessions with a parent
	Cooldowns int   `json:"cooldowns"` // copied
	Tokens    int   `json:"tokens"`    // gateway tokens copied now (hashes only)
	Memories  int   `json:"memories"`  // memory entries in the source (all verified in the target)
	// TurnEvents are the recorded turn steps `talaria trace` reads, in the
	// source (all verified in the target).
	TurnEvents int    `json:"turn_events"`
	Checksum   string `json:"checksum"` // sha256 of the message bytes, equal on both sides
}

// NotEmptyError refuses a target that holds sessions the source does not.
type NotEmptyError struct{ Foreign int }

func (e *NotEmptyError) Error() string {
	return fmt.Sprintf("the target database already holds %d session(s) that are not in the source; "+
		"use --append to copy into it anyway", e.Foreign)
}

// MismatchError is a failed verification.
type MismatchError struct{ What string }

func (e *MismatchError) Error() string { return "verification failed: " + e.What }

// Copy copies src into dst and verifies the copy. The source should not be
// written to meanwhile.
func Copy(ctx context.Context, src Source, dst Target, opt Options) (Report, error) {
	var rep Report
	srcSessions, err := allSessions(ctx, src)
	if err != nil {
		return rep, fmt.Errorf("list source sessions: %w", err)
	}
	dstSessions, err := allSessions(ctx, dst)
	if err != nil {
		return rep, fmt.Errorf("list target sessions: %w", err)
	}
	inSource := make(map[string]bool, len(srcSessions))
	for _, s := range srcSessions {
		inSource[s.ID] = true
	}
	foreign := 0
	for _, s := range dstSessions {
		if !inSource[s.ID] {
			foreign++
		}
	}
	if foreign > 0 && !opt.Append {
		return rep, &NotEmptyError{Foreign: foreign}
	}
	rep.Sessions = len(srcSessions)

	srcSum, dstSum := sha256.New(), sha256.New()
	for i, sess := range srcSessions {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		msgs, err := src.Messages(ctx, sess.ID, store.MessageQuery{IncludeArchived: true})
		if err != nil {
			return rep, fmt.Errorf("read session %s: %w", sess.ID, err)
		}
		last, err := src.LastSeq(ctx, sess.ID)
		if err != nil {
			return rep, fmt.Errorf("read session %s: %w", sess.ID, err)
		}
		created, err := dst.ImportSession(ctx, sess, last, msgs)
		if err != nil {
			return rep, fmt.Errorf("write session %s: %w", sess.ID, err)
		}
		if created {
			rep.Copied++
		} else {
			rep.Skipped++
		}
		got, err := dst.Messages(ctx, sess.ID, store.MessageQuery{IncludeArchived: true})
		if err != nil {
			return rep, fmt.Errorf("read back session %s: %w", sess.ID, err)
		}
		a, b := sha256.New(), sha256.New()
		hashMessages(a, msgs)
		hashMessages(b, got)
		if len(got) != len(msgs) || !equal(a, b) {
			what := "was copied with different messages"
			if !created {
				what = "already exists in the target with different messages"
			}
			return rep, &MismatchError{What: fmt.Sprintf("session %s %s (%d rows in the source, %d in the target)",
				sess.ID, what, len(msgs), len(got))}
		}
		hashMessages(srcSum, msgs)
		hashMessages(dstSum, got)
		rep.Messages += int64(len(msgs))
		if sess.ParentID != "" {
			rep.Lineage++
			tgt, err := dst.GetSession(ctx, sess.ID)
			if err != nil {
				return rep, fmt.Errorf("read back session %s: %w", sess.ID, err)
			}
			if tgt.ParentID != sess.ParentID {
				return rep, &MismatchError{What: fmt.Sprintf("session %s has parent %q in the target, %q in the source",
					sess.ID, tgt.ParentID, sess.ParentID)}
			}
		}
		n, err := copyTurnEvents(ctx, src, dst, sess.ID)
		if err != nil {
			return rep, err
		}
		rep.TurnEvents += n
		if opt.Progress != nil {
			opt.Progress(i+1, len(srcSessions))
		}
	}
	if !equal(srcSum, dstSum) {
		return rep, &MismatchError{What: "message checksums differ"}
	}
	rep.Checksum = hex.EncodeToString(srcSum.Sum(nil))

	cds, err := src.AllCooldowns(ctx)
	if err != nil {
		return rep, fmt.Errorf("read cooldowns: %w", err)
	}
	for _, c := range cds {
		if err := dst.SetCooldown(ctx, c); err != nil {
			return rep, fmt.Errorf("write cooldown %s/%s: %w", c.Provider, c.KeyID, err)
		}
	}
	got, err := dst.AllCooldowns(ctx)
	if err != nil {
		return rep, fmt.Errorf("read back cooldowns: %w", err)
	}
	have := map[[3]string]store.Cooldown{}
	for _, c := range got {
		have[[3]string{c.Provider, c.BaseURL, c.KeyID}] = c
	}
	for _, c := range cds {
		g, ok := have[[3]string{c.Provider, c.BaseURL, c.KeyID}]
		if !ok || !g.Until.Equal(c.Until) || g.Reason != c.Reason {
			return rep, &MismatchError{What: fmt.Sprintf("cooldown %s/%s was not copied", c.Provider, c.KeyID)}
		}
	}
	rep.Cooldowns = len(cds)

	// Gateway tokens (hashes only), so clients keep working after the move.
	srcTokens, err := src.ListTokens(ctx)
	if err != nil {
		return rep, fmt.Errorf("read tokens: %w", err)
	}
	dstTokens, err := dst.ListTokens(ctx)
	if err != nil {
		return rep, fmt.Errorf("read target tokens: %w", err)
	}
	known := map[string]bool{}
	for _, tk := range dstTokens {
		known[tk.ID], known["hash:"+tk.Hash] = true, true
	}
	for _, tk := range srcTokens {
		if known[tk.ID] || known["hash:"+tk.Hash] {
			continue
		}
		if err := dst.CreateToken(ctx, &tk); err != nil {
			return rep, fmt.Errorf("write token %s: %w", tk.ID, err)
		}
		rep.Tokens++
	}

	// Final count check over the whole target.
	if rep.Memories, err = copyMemories(ctx, src, dst); err != nil {
		return rep, err
	}

	after, err := allSessions(ctx, dst)
	if err != nil {
		return rep, fmt.Errorf("list target sessions: %w", err)
	}
	found := 0
	for _, s := range after {
		if inSource[s.ID] {
			found++
		}
	}
	if found != len(srcSessions) {
		return rep, &MismatchError{What: fmt.Sprintf("%d of %d sessions are in the target", found, len(srcSessions))}
	}
	return rep, nil
}

// allSessions pages through every session, sorted by id.
func allSessions(ctx context.Context, s store.Sessions) ([]store.Session, error) {
	const page = 500
	var out []store.Session
	seen := map[string]bool{}
	for off := 0; ; off += page {
		list, err := s.ListSessions(ctx, store.ListOptions{Limit: page, Offset: off})
		if err != nil {
			return nil, err
		}
		for _, ss := range list {
			if !seen[ss.ID] {
				seen[ss.ID] = true
				out = append(out, ss)
			}
		}
		if len(list) < page {
			break
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func equal(a, b hash.Hash) bool { return string(a.Sum(nil)) == string(b.Sum(nil)) }

// hashMessages feeds the bytes of each row (everything but the
// database-assigned ID) into h: length-prefixed strings, so the exact bytes
// of text and api_content count, and JSON for the structured parts.
func hashMessages(h hash.Hash, msgs []store.Message) {
	str := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	num := func(v int64) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(v))
		h.Write(n[:])
	}
	js := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			b = []byte(err.Error())
		}
		str(string(b))
	}
	for _, m := range msgs {
		str(m.SessionID)
		num(m.Seq)
		str(m.TurnID)
		str(string(m.Role))
		for _, p := range m.Content {
			str(string(p.Type))
			str(p.Text)
			str(p.MediaType)
			str(string(p.Data))
			str(p.URL)
		}
		num(int64(len(m.Content)))
		for _, c := range m.ToolCalls {
			str(c.ID)
			str(c.Name)
			str(c.Arguments)
		}
		num(int64(len(m.ToolCalls)))
		str(m.ToolCallID)
		str(m.ToolName)
		js(m.IsError)
		js(m.Reasoning)
		str(m.APIContent)
		str(string(m.Kind))
		js([]bool{m.Synthetic, m.Archived})
		str(string(m.FinishReason))
		js(m.Usage)
		str(m.Provider)
		str(m.Model)
		num(m.CreatedAt.UnixNano())
	}
}

// copyTurnEvents copies one session's turn event log (what `talaria trace`
// shows) unless the target already has it, and verifies it read back.
func copyTurnEvents(ctx context.Context, src Source, dst Target, sid string) (int, error) {
	evs, err := src.TurnEvents(ctx, sid, "")
	if err != nil {
		return 0, fmt.Errorf("read turn events of %s: %w", sid, err)
	}
	have, err := dst.TurnEvents(ctx, sid, "")
	if err != nil {
		return 0, fmt.Errorf("read target turn events of %s: %w", sid, err)
	}
	if len(have) == 0 && len(evs) > 0 {
		// In batches: one transaction per batch keeps a long log cheap.
		const batch = 500
		for i := 0; i < len(evs); i += batch {
			if err := dst.AppendTurnEvents(ctx, evs[i:min(i+batch, len(evs))]...); err != nil {
				return 0, fmt.Errorf("write turn events of %s: %w", sid, err)
			}
		}
		if have, err = dst.TurnEvents(ctx, sid, ""); err != nil {
			return 0, fmt.Errorf("read back turn events of %s: %w", sid, err)
		}
	}
	key := func(e store.TurnEvent) string {
		return fmt.Sprintf("%s\x00%d\x00%s\x00%s", e.TurnID, e.Seq, e.Kind, e.Name)
	}
	want := map[string]int{}
	for _, e := range evs {
		want[key(e)]++
	}
	for _, e := range have {
		want[key(e)]--
	}
	for _, n := range want {
		if n != 0 || len(have) != len(evs) {
			return 0, &MismatchError{What: fmt.Sprintf("session %s has %d turn events in the source, %d different ones in the target",
				sid, len(evs), len(have))}
		}
	}
	return len(evs), nil
}

// copyMemories copies the memory entries of every workspace and user that
// the target does not hold yet (by workspace, user, text and source
// session; ids are the target's own), then verifies every source entry is
// there.
func copyMemories(ctx context.Context, src Source, dst Target) (int, error) {
	mems, err := src.AllMemories(ctx)
	if err != nil {
		return 0, fmt.Errorf("read memory: %w", err)
	}
	have, err := dst.AllMemories(ctx)
	if err != nil {
		return 0, fmt.Errorf("read target memory: %w", err)
	}
	key := func(e store.MemoryEntry) [4]string { return [4]string{e.Workspace, e.User, e.Text, e.SourceSession} }
	count := map[[4]string]int{}
	for _, e := range have {
		count[key(e)]++
	}
	for _, e := range mems {
		if count[key(e)] > 0 {
			count[key(e)]--
			continue
		}
		c := e
		c.ID = 0
		if err := dst.AddMemory(ctx, &c); err != nil {
			return 0, fmt.Errorf("write memory entry %d: %w", e.ID, err)
		}
	}
	if have, err = dst.AllMemories(ctx); err != nil {
		return 0, fmt.Errorf("read back memory: %w", err)
	}
	clear(count)
	for _, e := range have {
		count[key(e)]++
	}
	for _, e := range mems {
		if count[key(e)] == 0 {
			return 0, &MismatchError{What: fmt.Sprintf("memory entry %d of workspace %s was not copied", e.ID, e.Workspace)}
		}
		count[key(e)]--
	}
	return len(mems), nil
}
