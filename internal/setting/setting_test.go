package setting

import (
	"testing"
	"time"
)

func TestOr(t *testing.T) {
	if Or(0, 4) != 4 || Or(-1, 4) != 4 || Or(2, 4) != 2 {
		t.Fatal("int")
	}
	if Or(time.Duration(0), time.Second) != time.Second || Or(time.Millisecond, time.Second) != time.Millisecond {
		t.Fatal("duration")
	}
	if Or(0.0, 0.5) != 0.5 || Or(-0.1, 0.5) != 0.5 || Or(0.25, 0.5) != 0.25 {
		t.Fatal("float")
	}
}
