package postgres

import "testing"

func TestRebind(t *testing.T) {
	for in, want := range map[string]string{
		`SELECT 1`: `SELECT 1`,
		`UPDATE queue SET started_at = ? WHERE id = ?`: `UPDATE queue SET started_at = $1 WHERE id = $2`,
		`WHERE a = ? AND (? = '' OR b = ?) LIMIT ?`:    `WHERE a = $1 AND ($2 = '' OR b = $3) LIMIT $4`,
	} {
		if got := rebind(in); got != want {
			t.Errorf("rebind(%q) = %q, want %q", in, got, want)
		}
	}
}
