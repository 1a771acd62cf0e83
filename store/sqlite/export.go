package sqlite

import (
	"context"
	"fmt"

	"github.com/talaria-agent/talaria/store"
)

// LastSeq is the highest seq the session ever handed out (deleted rows
// included), so a copy keeps seqs from being reused.
func (s *Store) LastSeq(ctx context.Context, id string) (int64, error) {
	const op = "last seq"
	if err := s.ready(op); err != nil {
		return 0, err
	}
	var n int64
	err := s.r.QueryRowContext(ctx, lastSeqSQL, id).Scan(&n)
	return n, s.lookup(op, "session "+id, err)
}

// QuickCheck runs SQLite's PRAGMA quick_check over the whole file: a
// damaged page is a store.KindCorrupt error naming the first problem.
// It reads every page, so it is for doctor, not for every open.
func (s *Store) QuickCheck(ctx context.Context) error {
	const op = "quick check"
	if err := s.ready(op); err != nil {
		return err
	}
	rows, err := s.r.QueryContext(ctx, `PRAGMA quick_check`)
	if err != nil {
		return s.wrap(op, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return s.wrap(op, err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return s.wrap(op, err)
	}
	if len(problems) > 0 {
		return &store.Error{Op: op, Kind: store.KindCorrupt, Path: s.path,
			Err: fmt.Errorf("integrity check found %d problem(s), first: %s", len(problems), problems[0])}
	}
	return nil
}
