// Package ctxkey gives a context value a typed key, so storing and reading
// it is one call each and a reader cannot assert the wrong type.
package ctxkey

import "context"

// Key is a context key for values of type T. Keys are compared by
// address: each New is a distinct key, even for the same T.
type Key[T any] struct{ name string }

// New returns a key; name is for debugging only.
func New[T any](name string) *Key[T] { return &Key[T]{name: name} }

// With returns a copy of ctx holding v under k.
func (k *Key[T]) With(ctx context.Context, v T) context.Context {
	return context.WithValue(ctx, k, v)
}

// From returns the value held under k, or T's zero value when ctx holds
// none.
func (k *Key[T]) From(ctx context.Context) T {
	v, _ := ctx.Value(k).(T)
	return v
}

// String names the key, as context's own String does for its values.
func (k *Key[T]) String() string { return "ctxkey." + k.name }
