package failover

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The library's words name no front end's commands, flags or config keys:
// a gateway client reads the same advice as a terminal. cmd/talaria adds
// its own (failline.go, explain.go) from the typed class.
func TestNoCLITextInAdvice(t *testing.T) {
	cli := regexp.MustCompile("talaria [a-z]|(^|[ (])--[a-z]|\\.ya?ml\\b|\\bbase_url\\b|/compact\\b|\\b[a-z]+\\.[a-z_]+: ")
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil || strings.HasPrefix(s, "(?") {
				return true // a pattern, not words
			}
			if cli.MatchString(s) {
				t.Errorf("%s: %q names a CLI command, flag or config key", fset.Position(lit.Pos()), s)
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("checked only %d files", checked)
	}
}
