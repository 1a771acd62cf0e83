package store

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// idTimeLayout makes ids sort by creation time (UTC, to the second).
const idTimeLayout = "20060102-150405"

// NewID returns a new, unique, time-sortable session id such as
// "20261129-081530-7f3a9c": the UTC time to the second, then 24 random bits
// so ids made within the same second by different processes do not clash.
func NewID(now time.Time) string {
	var b [3]byte
	// crypto/rand.Read never fails on supported platforms (it panics instead).
	_, _ = rand.Read(b[:])
	return now.UTC().Format(idTimeLayout) + "-" + hex.EncodeToString(b[:])
}
