package sqlite

import (
	"context"
	"database/sql"
	"errors"
)

// AddSpend adds usd to principal's spend of day.
func (s *Store) AddSpend(ctx context.Context, principal, day string, usd float64) error {
	return s.exec(ctx, "add spend", `INSERT INTO principal_spend (principal, day, usd) VALUES (?, ?, ?)
		ON CONFLICT (principal, day) DO UPDATE SET usd = principal_spend.usd + excluded.usd`, principal, day, usd)
}

// Spend is principal's recorded spend of day.
func (s *Store) Spend(ctx context.Context, principal, day string) (float64, error) {
	const op = "spend"
	if err := s.ready(op); err != nil {
		return 0, err
	}
	var usd float64
	err := s.r.QueryRowContext(ctx, `SELECT usd FROM principal_spend WHERE principal = ? AND day = ?`, principal, day).Scan(&usd)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return usd, s.wrap(op, err)
}
