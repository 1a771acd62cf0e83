package llmtest_test

import (
	"context"
	"testing"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/llmtest"
)

// Every class Classify can return has a scripted error, and the classifier
// agrees with it.
func TestFailClasses(t *testing.T) {
	for _, c := range failover.Classes() {
		if c.EngineOnly() {
			continue
		}
		t.Run(string(c), func(t *testing.T) {
			p := llmtest.New(llmtest.Fail(c))
			_, err := llm.Collect(p.Stream(context.Background(), &llm.Request{Model: "m"}), nil)
			if err == nil {
				t.Fatal("no error")
			}
			if got := failover.ClassifyError(err).Class; got != c {
				t.Errorf("classified as %s", got)
			}
		})
	}
}
