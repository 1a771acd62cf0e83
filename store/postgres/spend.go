package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// AddSpend adds usd to principal's spend of day, for every node on the
// database.
func (s *Store) AddSpend(ctx context.Context, principal, day string, usd float64) error {
	return s.exec(ctx, "add spend", `INSERT INTO principal_spend (principal, day, usd) VALUES ($1, $2, $3)
		ON CONFLICT (principal, day) DO UPDATE SET usd = principal_spend.usd + excluded.usd`, principal, day, usd)
}

// Spend is principal's recorded spend of day.
func (s *Store) Spend(ctx context.Context, principal, day string) (float64, error) {
	const op = "spend"
	if err := s.ready(op); err != nil {
		return 0, err
	}
	var usd float64
	err := s.pool.QueryRow(ctx, `SELECT usd FROM principal_spend WHERE principal = $1 AND day = $2`, principal, day).Scan(&usd)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return usd, s.wrap(op, err)
}
