package failover

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"slices"
	"testing"
)

// corpusFixture is one real provider error text (testdata/error_corpus.json).
type corpusFixture struct {
	Class    Class  `json:"class"`
	Source   string `json:"source"`
	Text     string `json:"text"`
	Status   int    `json:"status"`
	Provider string `json:"provider"`
	BaseURL  string `json:"base_url"`
	Body     bool   `json:"body"`  // Text is the raw response body
	Large    bool   `json:"large"` // the failed request filled most of the window
}

// heldOut puts a fixed quarter of the corpus aside by a hash of its text,
// chosen before any tuning: those texts are only ever evaluated.
func (f corpusFixture) heldOut() bool {
	h := fnv.New32a()
	h.Write([]byte(f.Text))
	return h.Sum32()%4 == 0
}

func (f corpusFixture) input() Input {
	in := Input{Provider: f.Provider, BaseURL: f.BaseURL, Status: f.Status, Now: testNow()}
	if f.Body {
		in.Body = []byte(f.Text)
	} else {
		in.Message = f.Text
	}
	if f.Large {
		in.ContextTokens, in.ContextWindow = 120_000, 128_000
	} else {
		in.ContextTokens, in.ContextWindow = 2_000, 128_000
	}
	return in
}

func loadCorpus(t *testing.T) []corpusFixture {
	t.Helper()
	raw, err := os.ReadFile("testdata/error_corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	var c struct{ Fixtures []corpusFixture }
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return c.Fixtures
}

// TestErrorCorpus classifies real error texts people paste (message-only
// texts from SDK exceptions, proxies and local servers among them) and
// holds the classifier to 90% on the held-out quarter and on the rest.
// go test ./failover/ -run TestErrorCorpus -v prints the counts.
func TestErrorCorpus(t *testing.T) {
	fx := loadCorpus(t)
	type tally struct{ right, all int }
	var split [2]tally // train, held-out
	byClass, bySource := map[Class]int{}, map[string]int{}
	for _, f := range fx {
		if f.Text == "" || f.Source == "" || f.Class == "" {
			t.Fatalf("fixture without text, source or class: %+v", f)
		}
		byClass[f.Class]++
		bySource[f.Source]++
		got := Classify(f.input()).Class
		i := 0
		if f.heldOut() {
			i = 1
		}
		split[i].all++
		if got == f.Class {
			split[i].right++
		} else if i == 0 {
			// Held-out misses are counted, never shown: tuning sees only
			// the training texts.
			t.Logf("miss: got %s, want %s: %.120q", got, f.Class, f.Text)
		}
	}
	pct := func(s tally) float64 { return 100 * float64(s.right) / float64(max(s.all, 1)) }
	t.Logf("corpus: %d fixtures; train %d/%d (%.1f%%); held-out %d/%d (%.1f%%)",
		len(fx), split[0].right, split[0].all, pct(split[0]), split[1].right, split[1].all, pct(split[1]))
	for _, k := range sortedKeys(byClass) {
		t.Logf("  class %-28s %d", k, byClass[Class(k)])
	}
	for _, k := range sortedKeys(bySource) {
		t.Logf("  source %s: %d", k, bySource[k])
	}
	if split[1].all*5 < len(fx) {
		t.Errorf("held-out set is %d of %d texts, under 20%%", split[1].all, len(fx))
	}
	for i, name := range []string{"train", "held-out"} {
		if pct(split[i]) < 90 {
			t.Errorf("%s accuracy %.1f%%, want at least 90%%", name, pct(split[i]))
		}
	}
}

func sortedKeys[K ~string, V any](m map[K]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, fmt.Sprint(k))
	}
	slices.Sort(out)
	return out
}
