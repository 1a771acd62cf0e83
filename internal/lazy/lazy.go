// Package lazy compiles regular expressions on first use instead of at
// package initialisation, so a process pays only for the patterns it uses
// (most runs never classify an error or redact a trace).
package lazy

import (
	"regexp"
	"sync"
)

// Regexp returns a function that compiles expr on its first call, once,
// and returns the same *regexp.Regexp to every caller; it panics then, as
// regexp.MustCompile does, on an invalid expression.
func Regexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
