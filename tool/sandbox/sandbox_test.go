package sandbox

import (
	"slices"
	"strings"
	"testing"
)

func TestReadOnlyCommand(t *testing.T) {
	for _, c := range []struct {
		line string
		want bool
	}{
		{"ls", true},
		{"ls -la src", true},
		{"cat a.txt | grep -n foo | head -5", true},
		{"git status", true},
		{"git diff HEAD~1", false}, // ~ is refused: not worth parsing
		{"git log --oneline", true},
		{"rg 'x y' .", true},
		{`grep "a b" f`, true},
		{"ls; rm -rf x", false},
		{"ls && rm -rf x", false},
		{"ls || rm x", false},
		{"ls > f", false},
		{"cat < f", false},
		{"ls &", false},
		{"echo $(rm x)", false},
		{"echo `rm x`", false},
		{`echo "$(rm x)"`, false},
		{"echo $HOME", false},
		{"(ls)", false},
		{"{ ls; }", false},
		{"ls\nrm x", false},
		{"FOO=1 ls", false},
		{"rm -rf x", false},
		{"git push", false},
		{"git", false},
		{"git diff --output=x", false},
		{"find . -delete", false},
		{"find . -exec rm {} +", false},
		{"find . -name '*.go'", true},
		{"sort -o out f", false},
		{"sort -oout f", false},
		{"rg --pre ./evil x", false},
		{"lsblk", false},
		{"", false},
		{"ls |", false},
		{"| ls", false},
		{"'unterminated", false},
	} {
		if got := ReadOnlyCommand(c.line); got != c.want {
			t.Errorf("ReadOnlyCommand(%q) = %v, want %v", c.line, got, c.want)
		}
	}
}

func TestEnvAllowList(t *testing.T) {
	environ := []string{"PATH=/bin", "HOME=/h", "LC_ALL=C", "OPENAI_API_KEY=sk-1", "GITHUB_TOKEN=t",
		"TALARIA_HOME=/th", "OTEL_EXPORTER_OTLP_HEADERS=x", "TMPDIR=/var/t", "GOFLAGS=-x", "AWS_SECRET_ACCESS_KEY=s"}
	got := Env(environ, []string{"GOFLAGS", "GITHUB_TOKEN", "TALARIA_HOME"}, true)
	want := []string{"PATH=/bin", "HOME=/h", "LC_ALL=C", "GOFLAGS=-x", "TMPDIR=/tmp"}
	if !slices.Equal(got, want) {
		t.Errorf("Env = %q, want %q", got, want)
	}
	if got := Env(environ, nil, false); !slices.Contains(got, "TMPDIR=/var/t") {
		t.Errorf("unconfined Env lost TMPDIR: %q", got)
	}
	for _, bad := range []string{"GITHUB_TOKEN", "TALARIA_X", "OTEL_Y", "MY_API_KEY", "A=B", ""} {
		if CheckEnvName(bad) == nil {
			t.Errorf("CheckEnvName(%q) accepted it", bad)
		}
	}
	if err := CheckEnvName("GOFLAGS"); err != nil {
		t.Errorf("CheckEnvName(GOFLAGS): %v", err)
	}
}

func TestNarrowerNeverWidens(t *testing.T) {
	for _, parent := range Modes {
		for _, asked := range append(slices.Clone(Modes), Mode("bogus")) {
			got := parent.Narrower(asked)
			if got.rank() > parent.rank() || got.rank() > max(asked.rank(), 0) {
				t.Errorf("%s.Narrower(%s) = %s: wider than asked or than the parent", parent, asked, got)
			}
		}
	}
	p := Policy{Mode: ReadOnly, Network: false}.Narrow(Off, true)
	if p.Mode != ReadOnly || p.Network {
		t.Errorf("Narrow widened a read-only policy: %+v", p)
	}
}

func TestParseMode(t *testing.T) {
	if m, err := ParseMode(""); err != nil || m != WorkspaceWrite {
		t.Errorf("ParseMode(\"\") = %v, %v", m, err)
	}
	if _, err := ParseMode("none"); err == nil {
		t.Error("ParseMode(none) accepted it")
	}
}

type fakeEgress struct{ hosts []string }

func (f *fakeEgress) Route(hosts []string) (string, string, error) {
	f.hosts = hosts
	return "/run/x/proxy.sock", "/usr/local/bin/talaria", nil
}

// TestCommandHostList: a host list keeps the private network namespace
// and runs the command under the relay, with the proxy's socket and the
// relay bound into the private /tmp; network on or read-only do not.
func TestCommandHostList(t *testing.T) {
	mech := Mechanism{Name: Bubblewrap, Path: "/usr/bin/bwrap"}
	for _, c := range []struct {
		name    string
		p       Policy
		relay   bool
		unshare bool
		str     string
	}{
		{"list", Policy{Mode: WorkspaceWrite, Hosts: []string{"a.com", "*.b.org"}}, true, true,
			"workspace-write, network: hosts a.com, *.b.org (proxy), enforced by bubblewrap"},
		{"on", Policy{Mode: WorkspaceWrite, Network: true, Hosts: []string{"a.com"}}, false, false,
			"workspace-write, network on, enforced"},
		{"read-only", Policy{Mode: ReadOnly, Hosts: []string{"a.com"}}, false, true, "read-only, network off"},
		{"off", Policy{Mode: WorkspaceWrite}, false, true, "workspace-write, network off"},
	} {
		t.Run(c.name, func(t *testing.T) {
			eg := &fakeEgress{}
			c.p.Workspace, c.p.Mechanism, c.p.Egress = "/work/ws", mech, eg
			argv, err := c.p.Command("", []string{"sh", "-c", "true"})
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Contains(argv, "--unshare-net"); got != c.unshare {
				t.Errorf("--unshare-net %v, want %v: %q", got, c.unshare, argv)
			}
			i := slices.Index(argv, "--")
			tail := argv[i+1:]
			if c.relay {
				want := []string{"/tmp/.talaria-net/relay", RelayCommand, "/tmp/.talaria-net/proxy.sock", "3128", "--", "sh", "-c", "true"}
				if !slices.Equal(tail, want) {
					t.Errorf("command %q, want %q", tail, want)
				}
				if j := slices.Index(argv, "/usr/local/bin/talaria"); j < 1 || argv[j-1] != "--ro-bind" || argv[j+1] != "/tmp/.talaria-net/relay" {
					t.Errorf("relay not bound read-only: %q", argv)
				}
				if j := slices.Index(argv, "/run/x/proxy.sock"); j < 1 || argv[j+1] != "/tmp/.talaria-net/proxy.sock" {
					t.Errorf("socket not bound: %q", argv)
				}
				if !slices.Equal(eg.hosts, c.p.Hosts) {
					t.Errorf("routed %q, want %q", eg.hosts, c.p.Hosts)
				}
			} else if tail[0] != "sh" || eg.hosts != nil {
				t.Errorf("no relay expected: %q", tail)
			}
			if s := c.p.String(); !strings.Contains(s, c.str) {
				t.Errorf("String() = %q, want it to contain %q", s, c.str)
			}
		})
	}
	p := Policy{Mode: WorkspaceWrite, Hosts: []string{"a.com"}, Workspace: "/work/ws", Mechanism: mech}
	if _, err := p.Command("", []string{"true"}); err == nil {
		t.Error("a host list without an egress proxy was accepted")
	}
	p.Egress, p.Workspace = &fakeEgress{}, "/tmp"
	if _, err := p.Command("", []string{"true"}); err == nil {
		t.Error("a host list with the workspace /tmp was accepted")
	}
	if n := (Policy{Mode: WorkspaceWrite, Hosts: []string{"a"}}).Narrow(WorkspaceWrite, false); n.Hosts != nil {
		t.Errorf("Narrow(net=false) kept the hosts %q", n.Hosts)
	}
}

func TestNarrowHosts(t *testing.T) {
	ww := Policy{Mode: WorkspaceWrite}
	cases := []struct {
		name      string
		server    Policy
		list      []string
		wantHosts []string
		wantErr   string
	}{
		{"empty list turns a host list off", Policy{Mode: WorkspaceWrite, Hosts: []string{"a.com"}}, []string{}, nil, ""},
		{"empty list turns any-host off", Policy{Mode: WorkspaceWrite, Network: true}, []string{}, nil, ""},
		{"subset of the server's list", Policy{Mode: WorkspaceWrite, Hosts: []string{"a.com", "b.com"}}, []string{"b.com"}, []string{"b.com"}, ""},
		{"host the server does not list", Policy{Mode: WorkspaceWrite, Hosts: []string{"a.com"}}, []string{"a.com", "c.com"}, nil, `"c.com" is not in`},
		{"any-host server takes a list", Policy{Mode: WorkspaceWrite, Network: true}, []string{"c.com"}, []string{"c.com"}, ""},
		{"network off stays off", ww, []string{"a.com"}, nil, "is off"},
		{"off mode cannot enforce", Policy{Mode: Off, Network: true}, []string{"a.com"}, nil, "confined"},
		{"read-only has no network", Policy{Mode: ReadOnly}, []string{"a.com"}, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.server.NarrowHosts(c.list)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Network {
				t.Errorf("Network = true; a narrowed policy reaches hosts through the proxy only")
			}
			if !slices.Equal(got.Hosts, c.wantHosts) {
				t.Errorf("Hosts = %v, want %v", got.Hosts, c.wantHosts)
			}
		})
	}
}
