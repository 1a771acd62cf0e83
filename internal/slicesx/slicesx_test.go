package slicesx

import (
	"encoding/json"
	"strconv"
	"testing"
)

func TestMap(t *testing.T) {
	if got := Map([]int{1, 2, 3}, strconv.Itoa); len(got) != 3 || got[0] != "1" || got[2] != "3" {
		t.Fatalf("Map = %q", got)
	}
	b, _ := json.Marshal(Map([]int(nil), strconv.Itoa))
	if string(b) != "[]" {
		t.Fatalf("empty Map encodes as %s, want []", b)
	}
}
