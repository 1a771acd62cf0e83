package turn_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/failover"
)

// Failure classes stay typed from where a failure is made to where it is
// read: in the engine, the agent, the gateway, the CLI and telemetry no
// class, reason or route outcome is written as a string literal (a class
// the vocabulary in failover/class.go does not declare, or a declared one
// spelled by hand), and no string is cast back to a failover.Class (the
// wire codec reads the typed class; nothing parses failure_reason). The
// failover tests check that every declared class has an explanation, and
// cmd/talaria's that it has an exit code.
func TestFailureClassesAreTyped(t *testing.T) {
	dirs := []string{".", "../agent", "../gateway", "../cmd/talaria", "../observe"}
	keys := map[string]bool{"Class": true, "Reason": true}
	declared := map[string]bool{}
	for _, c := range failover.Classes() {
		declared[string(c)] = true
	}
	fset := token.NewFileSet()
	checked := 0
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parser.ParseFile(fset, path, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			literal := func(e ast.Expr) (string, bool) {
				lit, ok := e.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return "", false
				}
				s, _ := strconv.Unquote(lit.Value)
				return s, true
			}
			bad := func(n ast.Node, what string) {
				t.Errorf("%s: %s", fset.Position(n.Pos()), what)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.KeyValueExpr:
					if k, ok := n.Key.(*ast.Ident); ok && keys[k.Name] {
						if s, ok := literal(n.Value); ok && !(k.Name == "Outcome" && s == "ok") {
							bad(n, k.Name+": "+strconv.Quote(s)+" is a string literal; use a failover.Class constant")
						}
					}
				case *ast.AssignStmt:
					for i, lhs := range n.Lhs {
						sel, ok := lhs.(*ast.SelectorExpr)
						if !ok || i >= len(n.Rhs) {
							continue
						}
						// A route's outcome: st.currentRoute().Outcome = ...
						_, route := sel.X.(*ast.CallExpr)
						if !keys[sel.Sel.Name] && !(route && sel.Sel.Name == "Outcome") {
							continue
						}
						if s, ok := literal(n.Rhs[i]); ok && !(sel.Sel.Name == "Outcome" && s == "ok") {
							bad(n, "."+sel.Sel.Name+" = "+strconv.Quote(s)+" is a string literal; use a failover.Class constant")
						}
					}
				case *ast.CallExpr:
					// failedResult(id, turn, "session", msg): a class
					// spelled by hand where a failure is made.
					name := ""
					switch fn := n.Fun.(type) {
					case *ast.Ident:
						name = fn.Name
					case *ast.SelectorExpr:
						name = fn.Sel.Name
					}
					if strings.Contains(strings.ToLower(name), "fail") {
						for _, arg := range n.Args {
							if s, ok := literal(arg); ok && declared[s] {
								bad(arg, name+"(..."+strconv.Quote(s)+"...) spells a class by hand; use its failover.Class constant")
							}
						}
					}
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Class" {
						if x, ok := sel.X.(*ast.Ident); ok && x.Name == "failover" {
							bad(n, "a string is cast to failover.Class; carry the typed class instead")
						}
					}
				}
				return true
			})
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d files; the paths are wrong", checked)
	}
}
