package failover

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/talaria-agent/talaria/llm"
)

// Every constant of type Class declared in class.go is listed by Classes:
// a class added without being listed would have no tested exit family,
// recovery profile or explanation.
func TestEveryDeclaredClassIsListed(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "class.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []Class
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Class" {
				continue
			}
			for _, v := range vs.Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok {
					t.Fatalf("class %s is not a string literal", vs.Names[0])
				}
				s, _ := strconv.Unquote(lit.Value)
				declared = append(declared, Class(s))
			}
		}
	}
	listed := Classes()
	if len(declared) < 30 {
		t.Fatalf("found only %d classes in class.go; the parse is wrong", len(declared))
	}
	for _, c := range declared {
		if !slices.Contains(listed, c) {
			t.Errorf("class %s is declared but not in Classes()", c)
		}
	}
	if len(listed) != len(declared) {
		t.Errorf("Classes() lists %d classes, class.go declares %d", len(listed), len(declared))
	}
}

// Every class has its own words: what happened, what Talaria does, what the
// person can do — never the fallbacks for an unrecognised failure, which is
// what `talaria explain-error` and a failed turn would otherwise say.
func TestEveryClassIsExplained(t *testing.T) {
	generic := Classified{Class: "not_a_class", Provider: "p", Status: 400}
	for _, c := range Classes() {
		t.Run(string(c), func(t *testing.T) {
			cl := classified(c)
			cl.Provider, cl.Status = "p", 400
			if c == ClassUnknown {
				return // the generic words are its own
			}
			if s := summary(cl); s == summary(generic) {
				t.Errorf("summary(%s) is the generic %q", c, s)
			}
			if a := advice(cl); a == advice(generic) || a == "" {
				t.Errorf("advice(%s) is the generic %q", c, a)
			}
			if a := actionText(cl); a == actionText(generic) && c != ClassServerError {
				t.Errorf("actionText(%s) is the generic %q", c, a)
			}
		})
	}
}

func TestCooldownClass(t *testing.T) {
	for _, tt := range []struct {
		reason     string
		want       Class
		unverified bool
	}{
		{"auth", ClassAuth, false},
		{"rate_limit", ClassRateLimit, false},
		{"", ClassRateLimit, false},
		{ReasonBillingUnverified, ClassBilling, true},
	} {
		c, u := CooldownClass(tt.reason)
		if c != tt.want || u != tt.unverified {
			t.Errorf("CooldownClass(%q) = %s, %t; want %s, %t", tt.reason, c, u, tt.want, tt.unverified)
		}
	}
}

// A connection never made keeps the timeout class (one retry, then a
// fallback) but is worded as what it is, with the cause taken from the
// error's type: the text need not say it.
func TestUnreachableWords(t *testing.T) {
	dial := &url.Error{Op: "Post", URL: "http://127.0.0.1:1/v1/chat/completions",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	// The adapter's message names no cause; the wrapped error's type does.
	err := &llm.APIError{Provider: "local", Transport: llm.TransportConnect, Message: "could not reach the server", Err: dial}
	in := InputFromError(err)
	if in.Connect != llm.ConnectRefused {
		t.Fatalf("Connect = %q, want %q", in.Connect, llm.ConnectRefused)
	}
	in.BaseURL = "http://127.0.0.1:1"
	c := Classify(in)
	if c.Class != ClassTimeout || !c.Retryable || c.Transport != llm.TransportConnect {
		t.Errorf("class %s retryable %t transport %q; want a retryable timeout over a connect failure", c.Class, c.Retryable, c.Transport)
	}
	if want := "could not connect to local (connection refused)"; c.Summary != want {
		t.Errorf("summary %q, want %q", c.Summary, want)
	}
	for _, w := range []string{"Could not connect to local at http://127.0.0.1:1 (connection refused)", "is the server running", "Check the base URL."} {
		if !strings.Contains(c.Advice, w) {
			t.Errorf("advice %q lacks %q", c.Advice, w)
		}
	}
	// No cause known (explain-error --transport connect): still not "timed out".
	c = Classify(Input{Transport: llm.TransportConnect})
	if !strings.Contains(c.Summary, "could not connect to the provider (no connection)") || strings.Contains(c.Advice, "timed out") {
		t.Errorf("summary %q advice %q", c.Summary, c.Advice)
	}
	// A timeout keeps the timeout words.
	c = ClassifyError(&llm.APIError{Provider: "p", Transport: llm.TransportTimeout, Err: errors.New("i/o timeout")})
	if !strings.Contains(c.Summary, "timed out") {
		t.Errorf("timeout summary %q", c.Summary)
	}
}
