package wire

import "testing"

// A body built from nothing gets the capacity the adapter's hint asks for
// and no more: the hint already over-estimates, and a long session's first
// body is the largest allocation of its process (27 MB at 50,000
// messages). Appending past it grows by an eighth, not by doubling.
func TestWireCacheBodySizing(t *testing.T) {
	head := []byte(`{"model":"m","messages":[`)
	hint := func(from int) int { return 1 << 20 }
	tests := []struct {
		name  string
		cache *Cache
	}{
		{"no cache", nil},
		{"empty cache", &Cache{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, cut := tt.cache.Begin("k", head, 3, hint)
			if cut != (Cut{}) || string(body) != string(head) {
				t.Fatalf("Begin = %q, %+v; want the head alone", body, cut)
			}
			if want := len(head) + hint(0); cap(body) != want {
				t.Errorf("capacity %d, want the hint's %d", cap(body), want)
			}
		})
	}
	t.Run("growth", func(t *testing.T) {
		body := make([]byte, 1000, 1000)
		body = AppendItem(body, make([]byte, 100), 1, 10)
		if n := len(body); n != 1101 {
			t.Fatalf("len %d, want 1101", n)
		}
		if c, size := cap(body), 1000+100+1+10; c < size || c > size+size/8+512 {
			t.Errorf("capacity %d after growing to %d: want at most an eighth (and 512 bytes) more", c, size)
		}
	})
}
