// Package footprint guards what the talaria binary links: every package
// and every method kept costs every invocation (start time and resident
// memory are mostly the binary's own pages), so what crept in once
// (gRPC through SDKs, whose x/net/trace init reaches html/template and a
// reflective method call that makes the linker keep every exported
// method) must not come back unnoticed. See the README's "Footprint".
package footprint

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// forbidden are packages the CLI must not link (a prefix matches the
// package and everything under it).
var forbidden = []string{
	"golang.org/x/net/trace",
	"html/template",
	"text/template",
	"github.com/google/go-cmp/",
	"google.golang.org/grpc",
	// /metrics is served by observe.PromReader and internal/promtext: the
	// Prometheus client library, its protobuf model and the OTel
	// Prometheus exporter cost every command ~5.7 MiB (issue 30).
	"github.com/prometheus/",
	"go.opentelemetry.io/otel/exporters/prometheus",
}

// maxStripped is the budget of the stripped (-s -w) static binary. It was
// 36.6 MiB before the service wave, 90.3 MiB with gRPC linked, 50.5 MiB
// after issue 30 removed gRPC, 50.2 MiB once /metrics stopped linking
// client_golang and the OTel Prometheus exporter. Issue 27's terminal UI
// (bubbletea, bubbles, lipgloss) then added 1.87 MiB and issue 28's
// surfaces (ACP, MCP server, OpenAI-compatible routes) ~0.8 MiB; the
// budget leaves about 1 MiB of margin over the measured size (see
// BENCHMARKS.md). Issue 30's target is 45 MiB. Raise it only with the
// BENCHMARKS.md figures that justify it.
const maxStripped = 54 << 20

func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

func deps(t *testing.T, root string, tags ...string) map[string]bool {
	t.Helper()
	args := []string{"list", "-deps", "-f", "{{.ImportPath}}"}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.Command("go", append(args, "./cmd/talaria")...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/talaria: %v", err)
	}
	set := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		set[p] = true
	}
	return set
}

func matches(pkg, rule string) bool {
	if strings.HasSuffix(rule, "/") {
		return strings.HasPrefix(pkg, rule) || pkg == strings.TrimSuffix(rule, "/")
	}
	return pkg == rule || strings.HasPrefix(pkg, rule+"/")
}

func TestNoForbiddenPackages(t *testing.T) {
	root := moduleRoot(t)
	for pkg := range deps(t, root) {
		for _, rule := range forbidden {
			if matches(pkg, rule) {
				t.Errorf("cmd/talaria links %s (forbidden: %s); find who imports it with: go mod why -m %s / go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./cmd/talaria", pkg, rule, pkg)
			}
		}
	}
	// The check can see what it forbids: the explicit gRPC build links
	// gRPC.
	if !deps(t, root, "otlpgrpc")["google.golang.org/grpc"] {
		t.Error("-tags otlpgrpc does not link google.golang.org/grpc: the forbidden-package check may be blind")
	}
}

// TestLinkedBinary links the stripped binary once with the linker's
// dependency dump: no reachable function may be flagged <ReflectMethod>
// (a call to reflect.Value.Method/MethodByName or reflect.Type's, after
// which the linker keeps every exported method of every reachable type),
// and the binary must fit the size budget.
func TestLinkedBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("links the binary; run without -short")
	}
	root := moduleRoot(t)
	bin := filepath.Join(t.TempDir(), "talaria")
	cmd := exec.Command("go", "build", "-ldflags=-s -w -dumpdep", "-o", bin, "./cmd/talaria")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var flagged []string
	edges := 0
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.Contains(line, []byte(" -> ")) {
			edges++
		}
		if bytes.Contains(line, []byte("<ReflectMethod>")) && len(flagged) < 20 {
			from, _, _ := strings.Cut(sc.Text(), " -> ")
			flagged = append(flagged, from)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("go build: %v\n%s", err, stderr.String())
	}
	if edges == 0 {
		// go build may route the linker's output to stderr.
		for _, line := range strings.Split(stderr.String(), "\n") {
			if strings.Contains(line, " -> ") {
				edges++
			}
			if strings.Contains(line, "<ReflectMethod>") && len(flagged) < 20 {
				from, _, _ := strings.Cut(line, " -> ")
				flagged = append(flagged, from)
			}
		}
	}
	if edges == 0 {
		t.Fatal("the linker printed no dependency edges: -dumpdep gave nothing to check")
	}
	for _, f := range flagged {
		t.Errorf("reachable reflective method call: %s (the linker then keeps every exported method)", f)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stripped binary: %.1f MiB (budget %d MiB); %d dependency edges", float64(fi.Size())/(1<<20), maxStripped>>20, edges)
	if fi.Size() > maxStripped {
		t.Errorf("stripped binary is %.1f MiB, over the %d MiB budget", float64(fi.Size())/(1<<20), maxStripped>>20)
	}
}

// The Go client of `talaria serve` links nothing of the server: no
// Prometheus, OpenTelemetry or gRPC.
func TestClientLinksNoServer(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "./gateway/client")
	cmd.Dir = moduleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./gateway/client: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, rule := range []string{"github.com/prometheus/", "go.opentelemetry.io/", "google.golang.org/grpc", "github.com/talaria-agent/talaria/gateway"} {
			if matches(pkg, rule) && pkg != "github.com/talaria-agent/talaria/gateway/client" {
				t.Errorf("gateway/client links %s", pkg)
			}
		}
	}
}
