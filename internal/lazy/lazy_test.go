package lazy

import (
	"sync"
	"testing"
)

func TestRegexpCompilesOnceOnFirstUse(t *testing.T) {
	re := Regexp(`a+b`)
	var wg sync.WaitGroup
	got := make(chan any, 8)
	for range 8 {
		wg.Go(func() { got <- re() })
	}
	wg.Wait()
	close(got)
	first := re()
	for g := range got {
		if g != first {
			t.Fatal("a second *regexp.Regexp was compiled")
		}
	}
	if !first.MatchString("xaab") || first.MatchString("b") {
		t.Fatal("wrong pattern")
	}
}

func TestRegexpPanicsOnFirstUseOfABadPattern(t *testing.T) {
	re := Regexp(`(`) // no panic here
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	re()
}
