package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/talaria-agent/talaria/store"
)

func TestKindOf(t *testing.T) {
	tests := []struct {
		err  error
		want store.ErrorKind
	}{
		{&pgconn.PgError{Code: "53100"}, store.KindDiskFull},
		{&pgconn.PgError{Code: "25006"}, store.KindReadOnly},
		{&pgconn.PgError{Code: "40P01"}, store.KindLocked},
		{&pgconn.PgError{Code: "XX001"}, store.KindCorrupt},
		{&pgconn.PgError{Code: "57P01"}, store.KindUnavailable},
		{&pgconn.PgError{Code: "08006"}, store.KindUnavailable},
		{&pgconn.PgError{Code: "53300"}, store.KindUnavailable},
		{&pgconn.PgError{Code: "23505"}, store.KindOther},
		{fmt.Errorf("wrapped: %w", pgx.ErrNoRows), store.KindNotFound},
		{context.Canceled, store.KindOther},
		{errClosed, store.KindClosed},
		{errors.New("unexpected EOF"), store.KindUnavailable},
		{errors.New("closed pool"), store.KindClosed},
		{errors.New("something else"), store.KindOther},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			if got := kindOf(tt.err); got != tt.want {
				t.Fatalf("kindOf(%v) = %s, want %s", tt.err, got, tt.want)
			}
		})
	}
}
