package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// The README lists the error codes clients branch on: every ErrorCode
// declared here, and nothing else, in the order declared.
func TestReadmeListsEveryErrorCode(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok {
			if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "ErrorCode" {
				v, err := strconv.Unquote(vs.Values[0].(*ast.BasicLit).Value)
				if err != nil {
					t.Fatal(err)
				}
				codes = append(codes, "`"+v+"`")
			}
		}
		return true
	})
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const lead = "The codes are `api.ErrorCode`'s"
	i := strings.Index(string(readme), lead)
	if i < 0 {
		t.Fatalf("README has no %q paragraph", lead)
	}
	para, _, _ := strings.Cut(string(readme[i:]), "\n\n")
	para = strings.Join(strings.Fields(para), " ")
	_, list, _ := strings.Cut(para, ": ")
	want := strings.Join(codes, ", ") + "."
	if len(codes) < 19 || list != want {
		t.Errorf("README lists\n  %s\nerrors.go declares\n  %s", list, want)
	}
}
