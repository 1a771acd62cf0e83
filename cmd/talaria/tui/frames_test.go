package tui

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

var update = flag.Bool("update", false, "rewrite testdata/frames from the current rendering")

// frameNow is the clock of the frames: ages in the picker stay put.
var frameNow = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

// frameModel is a started model at 80×24 with a footer's worth of facts.
func frameModel() *model {
	m := newModel(New(Options{}))
	m.now = func() time.Time { return frameNow }
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	m.started = true
	m.info = Info{Model: "anthropic/claude-sonnet-4-5", Session: "20261205-114233-a1b2c3d4e5", Tokens: 48213, CostUSD: 0.1834, ContextPct: 24}
	return m
}

// frame is what the terminal shows: the lines printed above the live area
// (finished blocks, cards), then the live area; ANSI stripped, trailing
// blanks trimmed, so a file reads as the screen does.
func frame(m *model, above ...string) string {
	all := append(append([]string(nil), above...), m.View().Content)
	lines := strings.Split(ansi.Strip(strings.Join(all, "\n")), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n") + "\n"
}

// Golden frames of the main states, compared byte for byte; go test
// ./cmd/talaria/tui -update rewrites them (review the diff).
func TestGoldenFrames(t *testing.T) {
	diff := UnifiedDiff("server.go", "package main\n\nconst port = 8080\n\nfunc main() {}\n", "package main\n\nconst port = 9090\n\nfunc main() {}\n")
	for _, tc := range []struct {
		name string
		make func() string
	}{
		{"idle", func() string { return frame(frameModel()) }},
		{"streaming", func() string {
			m := frameModel()
			m.running, m.cancel = true, func() {}
			m.stream = "## Plan\n\n1. **Read** `server.go` and find the port.\n2. Change it:\n\n```go\nconst port = 9090\n```\n\n| file | change |\n|---|---|\n| server.go | port |\n"
			return frame(m, m.echo("move the server to port 9090"))
		}},
		{"toolcard", func() string {
			m := frameModel()
			m.running, m.cancel = true, func() {}
			card := m.toolCard(toolEndMsg{id: "1", name: "shell", arg: "go test ./...", took: 2300 * time.Millisecond,
				result: "ok  \texample.com/app\t0.412s\nok  \texample.com/app/store\t1.020s\n?   \texample.com/app/cmd\t[no test files]\nok  \texample.com/app/web\t0.230s\n"})
			failed := m.toolCard(toolEndMsg{id: "2", name: "read_file", arg: "missing.go", failed: true, took: 3 * time.Millisecond, result: "missing.go does not exist"})
			return frame(m, card, failed)
		}},
		{"approval", func() string {
			m := frameModel()
			m.running, m.cancel = true, func() {}
			m.approval = &pendingApproval{a: Approval{Tool: "edit_file", Summary: "server.go", Detail: diff}}
			return frame(m)
		}},
		{"picker", func() string {
			m := frameModel()
			m.picker = newPicker([]SessionItem{
				{ID: "20261205-093012-aa11bb22cc", Title: "fix the flaky store test", Model: "claude-sonnet-4-5", Updated: frameNow.Add(-3 * time.Hour)},
				{ID: "20261205-093512-dd33ee44ff", ParentID: "20261205-093012-aa11bb22cc", Title: "find where the race is", Model: "claude-sonnet-4-5", Updated: frameNow.Add(-170 * time.Minute)},
				{ID: "20261205-114233-a1b2c3d4e5", Title: "move the server to port 9090", Model: "claude-sonnet-4-5", Updated: frameNow.Add(-5 * time.Minute)},
				{ID: "20261203-160000-0123456789", Title: "write the release notes", Model: "gpt-4.1", Updated: frameNow.Add(-50 * time.Hour)},
			})
			m.picker.q = "s"
			m.picker.filter()
			return frame(m)
		}},
		{"footer-steer", func() string {
			m := frameModel()
			m.running, m.cancel = true, func() {}
			m.steering = []steerItem{{"steer-1", "also update the README"}}
			m.queued = []string{"/usage"}
			return frame(m)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.make()
			p := filepath.Join("testdata", "frames", tc.name+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(p)
			if err != nil {
				t.Fatalf("%v (go test ./cmd/talaria/tui -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("frame %s changed (go test ./cmd/talaria/tui -update rewrites it):\n--- got\n%s--- want\n%s", tc.name, got, want)
			}
			for i, l := range strings.Split(got, "\n") {
				if w := ansi.StringWidth(l); w > 80 {
					t.Errorf("line %d is %d cells wide: %q", i+1, w, l)
				}
			}
		})
	}
}

// The footer keeps tokens and cost at any usual width: the session id,
// the key hint, the provider and the context use give way first.
func TestFooterKeepsCost(t *testing.T) {
	for _, tc := range []struct {
		name    string
		width   int
		running bool
		notice  string
	}{
		{"idle 80", 80, false, ""},
		{"working 80", 80, true, ""},
		{"working 60", 60, true, ""},
		{"working 44", 44, true, ""},
		{"notice 80", 80, true, "stopping the turn (Ctrl+C again to quit)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := frameModel()
			m.Update(tea.WindowSizeMsg{Width: tc.width, Height: 24})
			m.running, m.notice = tc.running, tc.notice
			if tc.running {
				m.cancel = func() {}
			}
			f := ansi.Strip(m.footer())
			if !strings.Contains(f, "48.2k tok · $0.1834") {
				t.Errorf("footer %q lost the tokens or the cost", f)
			}
			if w := ansi.StringWidth(f); w > tc.width {
				t.Errorf("footer %q is %d cells, the screen %d", f, w, tc.width)
			}
			if tc.notice != "" && !strings.Contains(f, tc.notice) {
				t.Errorf("footer %q lost the notice", f)
			}
		})
	}
}
