package store

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// idTimeLayout makes ids sort by creation time (UTC, to the second).
const idTimeLayout = "20060102-150405"

// NewID returns a new, unique, time-sortable session id such as
// "20261129-081530-7f3a9c01d2e4": the UTC time to the second, then 48
// random bits, so that even a gateway creating thousands of sessions a
// second practically never draws the same id twice (a million in one
// second collide with odds of about 1 in 500). Backends still retry an
// insert whose generated id is taken.
func NewID(now time.Time) string {
	var b [6]byte
	// crypto/rand.Read never fails on supported platforms (it panics instead).
	_, _ = rand.Read(b[:])
	return now.UTC().Format(idTimeLayout) + "-" + hex.EncodeToString(b[:])
}
