package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
)

// A stream that stalls after its first event ends at timeouts.stream_idle
// and is retried as a timeout; while the retry waits for its first token,
// a "waiting for MODEL… Ns" line says so on stderr.
func TestStalledStreamRetriedAndWaitShown(t *testing.T) {
	e := newCLIEnv(t)
	e.writeConfig("timeouts:\n  stream_idle: 300ms\n")
	e.srv.Script(
		fakellm.Text("this answer stalls after its first words").WithChunkDelay(time.Minute),
		fakellm.Text("finally").WithLatency(waitDelay+1500*time.Millisecond),
	)
	start := time.Now()
	out := e.runTurn("openai", nil, "hi")
	if out.code != exitOK || strings.TrimSpace(out.stdout) != "finally" {
		t.Fatalf("exit %d stdout %q\n%s", out.code, out.stdout, out.stderr)
	}
	if d := time.Since(start); d > 45*time.Second {
		t.Errorf("took %v: the stall was not cut by stream_idle", d)
	}
	if !strings.Contains(out.stderr, "retrying") || !strings.Contains(out.stderr, "tim") {
		t.Errorf("no timeout retry on stderr:\n%s", out.stderr)
	}
	if !regexp.MustCompile(`· waiting for ` + regexp.QuoteMeta(testModel) + `… [2-9]s\n`).MatchString(out.stderr) {
		t.Errorf("no waiting line on stderr:\n%s", out.stderr)
	}
	if n := len(e.srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

// On a terminal the waiting line counts up in place and is erased before
// the answer; its control bytes go to the raw stream only.
func TestWaitingLineOnTerminal(t *testing.T) {
	var raw testenv.Buffer
	p := newProgress(newTermWriter(&raw), nil)
	p.raw, p.tty = &raw, true
	p.waitDelay, p.waitTick = 20*time.Millisecond, 10*time.Millisecond
	stop := p.waitFor("slow-model")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(raw.String(), "waiting for slow-model… ") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	p.status("next")
	got := raw.String()
	if !strings.Contains(got, "\r\x1b[K· waiting for slow-model… ") {
		t.Fatalf("no in-place waiting line: %q", got)
	}
	if !strings.HasSuffix(got, "\r\x1b[K· next\n") {
		t.Errorf("the waiting line was not erased before the next line: %q", got)
	}
}
