package ctxkey

import (
	"context"
	"testing"
)

func TestKeysAreDistinct(t *testing.T) {
	a, b := New[*int]("a"), New[*int]("b")
	n := 7
	ctx := a.With(context.Background(), &n)
	if got := a.From(ctx); got != &n {
		t.Fatalf("a.From = %v", got)
	}
	if got := b.From(ctx); got != nil {
		t.Fatalf("b.From sees a's value: %v", got)
	}
	if got := a.From(context.Background()); got != nil {
		t.Fatalf("empty context gives %v", got)
	}
}
