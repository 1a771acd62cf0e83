//go:build linux

package sandboxtest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/tool/sandbox"
	"github.com/talaria-agent/talaria/tool/sandbox/egress"
)

// TestNetworkHostList: with sandbox.network a list of hosts, a command
// reaches a listed host (a local server, listed as 127.0.0.1:PORT) through
// the egress proxy; an unlisted local port gets the sandbox's 403, over
// plain HTTP and over a CONNECT tunnel; and a direct connection without
// the proxy finds no route. Start-up names the list.
func TestNetworkHostList(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") != "true" {
			t.Skip("SKIPPING the host-list network test: curl is not installed")
		}
		t.Fatal("curl is not installed")
	}
	var allowedHits, otherHits atomic.Int32
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allowedHits.Add(1)
		fmt.Fprint(w, "allowed-host-reached")
	}))
	defer allowed.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		fmt.Fprint(w, "other-host-reached")
	}))
	defer other.Close()
	au, _ := url.Parse(allowed.URL)

	h := newHome(t)
	h.config("sandbox:\n  mode: workspace-write\n  network: [\"" + au.Host + "\", \"*.example.invalid\"]\n")
	cmd := strings.Join([]string{
		"echo A; curl -sS --max-time 10 " + allowed.URL + "/a",
		"echo; echo B; curl -sS --max-time 10 " + other.URL + "/b",
		"echo; echo C; curl -sS --max-time 10 -p " + other.URL + "/c",
		"echo; echo D; curl -sS --max-time 5 --noproxy '*' " + allowed.URL + "/d",
		"echo; echo PROXY=$http_proxy NO_PROXY=${NO_PROXY-unset}",
	}, "; ")
	r, stderr := h.call("", "shell", map[string]any{"command": cmd})
	t.Logf("the command's result:\n%s", r)
	part := func(from, to string) string {
		i := strings.Index(r, "\n"+from+"\n")
		if from == "A" {
			i = strings.Index(r, from+"\n")
		}
		j := strings.Index(r, "\n"+to+"\n")
		if to == "" {
			j = len(r)
		}
		if i < 0 || j < i {
			t.Fatalf("the command's output lacks its sections:\n%s\nstderr:\n%s", r, stderr)
		}
		return r[i:j]
	}
	if a := part("A", "B"); !strings.Contains(a, "allowed-host-reached") {
		t.Errorf("the listed host was not reached through the proxy:\n%s\nstderr:\n%s", a, stderr)
	}
	if b := part("B", "C"); !strings.Contains(b, "refused by the sandbox") || !strings.Contains(b, "not in the sandbox's network list") {
		t.Errorf("plain HTTP to an unlisted port: want the sandbox's 403 body:\n%s", b)
	}
	if c := part("C", "D"); !strings.Contains(c, "403") {
		t.Errorf("CONNECT to an unlisted port: want a 403:\n%s", c)
	}
	if d := part("D", ""); strings.Contains(d, "allowed-host-reached") {
		t.Errorf("a direct connection (no proxy) reached the host:\n%s", d)
	}
	if otherHits.Load() != 0 {
		t.Errorf("the unlisted server was reached %d times", otherHits.Load())
	}
	if allowedHits.Load() != 1 {
		t.Errorf("the listed server was reached %d times, want 1 (through the proxy only)", allowedHits.Load())
	}
	if !strings.Contains(r, "PROXY=http://127.0.0.1:") || !strings.Contains(r, "NO_PROXY=unset") {
		t.Errorf("the command's proxy environment is wrong:\n%s", r)
	}
	want := "network: hosts " + au.Host + ", *.example.invalid (proxy)"
	if !strings.Contains(stderr, want) {
		t.Errorf("start did not say %q:\n%s", want, stderr)
	}
	d := exec.Command(bin, "doctor")
	d.Env, d.Dir = h.env, h.ws
	out, _ := d.CombinedOutput()
	if !strings.Contains(string(out), want) {
		t.Errorf("doctor did not say %q:\n%s", want, out)
	}
}

// TestRelayLatency measures what the relay adds per confined command:
// the median of n runs of `true` under workspace-write with network false
// and with a host list (alternating, same process), as the shell tool
// starts them. A benchmark: TALARIA_SANDBOX_BENCH=100 runs it (see
// BENCHMARKS.md).
func TestRelayLatency(t *testing.T) {
	n := 0
	if _, err := fmt.Sscan(os.Getenv("TALARIA_SANDBOX_BENCH"), &n); err != nil || n <= 0 {
		t.Skip("benchmark: TALARIA_SANDBOX_BENCH=100 runs it")
	}
	needBwrap(t)
	mech := sandbox.Detect(context.Background())
	if !mech.Enforced() {
		t.Fatalf("bubblewrap cannot run here: %s", mech.Why)
	}
	pool := egress.NewPool(bin, nil)
	defer pool.Close()
	ws := t.TempDir()
	off := sandbox.Policy{Mode: sandbox.WorkspaceWrite, Workspace: ws, Mechanism: mech}
	list := off
	list.Hosts, list.Egress = []string{"example.invalid"}, pool
	times := map[string][]time.Duration{}
	for i := range 2 * n {
		name, p := "network false", off
		if i%2 == 1 {
			name, p = "network list", list
		}
		argv, err := p.Command("", []string{"/bin/sh", "-c", "true"})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		times[name] = append(times[name], time.Since(start))
	}
	med := map[string]time.Duration{}
	for name, ds := range times {
		slices.Sort(ds)
		med[name] = ds[len(ds)/2]
		t.Logf("%s: median %v over %d runs of true (min %v, max %v)", name, ds[len(ds)/2], len(ds), ds[0], ds[len(ds)-1])
	}
	t.Logf("the relay adds %v per call (median)", med["network list"]-med["network false"])
}
