package sandbox

import (
	"slices"
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
