package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/tool"
)

func TestNew(t *testing.T) {
	root, _ := testWS(t)
	tools, err := New(Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	wantNames := []string{"read_file", "write_file", "edit_file", "list_dir", "search_files", "shell", "todo"}
	wantRO := map[string]bool{"read_file": true, "list_dir": true, "search_files": true}
	var names []string
	for _, tl := range tools {
		info := tl.Info()
		names = append(names, info.Name)
		if info.ReadOnly != wantRO[info.Name] {
			t.Errorf("%s ReadOnly = %v", info.Name, info.ReadOnly)
		}
		if info.Description == "" {
			t.Errorf("%s has no description", info.Name)
		}
	}
	if strings.Join(names, ",") != strings.Join(wantNames, ",") {
		t.Errorf("names %v, want %v", names, wantNames)
	}

	// Every schema must register and behave under the registry's validator.
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatalf("built-in schemas do not register: %v", err)
	}
	valid := map[string]string{
		"read_file":    `{"path":"a","start_line":2,"end_line":3}`,
		"write_file":   `{"path":"a","content":""}`,
		"edit_file":    `{"path":"a","old_string":"x","new_string":"","replace_all":true}`,
		"list_dir":     ``,
		"search_files": `{"pattern":"x","glob":"*.go","max_results":5,"path":"."}`,
		"shell":        `{"command":"ls","timeout_seconds":600}`,
	}
	for name, args := range valid {
		if _, err := reg.Validate(name, args); err != nil {
			t.Errorf("Validate(%s, %s): %v", name, args, err)
		}
	}
	invalid := map[string]string{
		"read_file":    `{"start_line":0}`,
		"write_file":   `{"path":"a"}`,
		"edit_file":    `{"path":"a","old_string":"","new_string":"b"}`,
		"list_dir":     `{"depth":0}`,
		"search_files": `{"pattern":"x","max_results":100000}`,
		"shell":        `{"command":"ls","timeout_seconds":601}`,
	}
	for name, args := range invalid {
		var ae *tool.ArgError
		if _, err := reg.Validate(name, args); !errors.As(err, &ae) {
			t.Errorf("Validate(%s, %s) = %v, want *ArgError", name, args, err)
		}
	}
	a, _ := reg.Specs()[0].Parameters.MarshalJSON()
	b, _ := ReadFile(Options{Root: root}).Info().Parameters.MarshalJSON()
	if string(a) != string(b) {
		t.Errorf("read_file schema is not already compact:\n%s\n%s", a, b)
	}
}

func TestNewBadRoot(t *testing.T) {
	root, _ := testWS(t)
	writeFiles(t, root, map[string]string{"file": "x"})
	for name, r := range map[string]string{
		"empty":    "",
		"relative": "ws",
		"missing":  filepath.Join(root, "nope"),
		"a file":   filepath.Join(root, "file"),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := New(Options{Root: r}); !errors.Is(err, ErrBadRoot) {
				t.Errorf("New(%q) error = %v, want ErrBadRoot", r, err)
			}
		})
	}
}

// TestToolsWithBadRoot: constructors cannot fail, so a bad root must show
// up as error results, never a panic.
func TestToolsWithBadRoot(t *testing.T) {
	args := map[string]string{
		"read_file": `{"path":"a"}`, "write_file": `{"path":"a","content":"x"}`,
		"edit_file": `{"path":"a","old_string":"x","new_string":"y"}`, "list_dir": `{}`,
		"search_files": `{"pattern":"x"}`, "shell": `{"command":"true"}`,
	}
	opt := Options{Root: "relative/root"}
	for _, tl := range []tool.Tool{ReadFile(opt), WriteFile(opt), EditFile(opt), ListDir(opt), SearchFiles(opt), Shell(opt)} {
		name := tl.Info().Name
		t.Run(name, func(t *testing.T) {
			res, err := tl.Run(context.Background(), json.RawMessage(args[name]))
			if err != nil || !res.IsError || !strings.Contains(res.Content, "workspace root is not usable") {
				t.Errorf("got %+v, %v", res, err)
			}
		})
	}
}

func TestRunArgumentErrors(t *testing.T) {
	root, _ := testWS(t)
	tools, err := New(Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		t.Run(tl.Info().Name, func(t *testing.T) {
			// Unvalidated, wrongly shaped arguments (an embedder calling
			// Run directly) must give an error result.
			res, err := tl.Run(context.Background(), json.RawMessage(`{"path":7,"command":7,"pattern":7,"depth":"x"}`))
			if err != nil || !res.IsError || !strings.Contains(res.Content, "invalid arguments") {
				t.Errorf("got %+v, %v", res, err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			res, err = tl.Run(ctx, json.RawMessage(`{}`))
			if err != nil || !res.IsError || !strings.Contains(res.Content, "interrupted") {
				t.Errorf("cancelled: got %+v, %v", res, err)
			}
		})
	}
}

func TestNewToolRecoversPanic(t *testing.T) {
	ft := newTool(Options{Root: t.TempDir(), MaxOutput: 1000}, tool.Info{Name: "boom", Parameters: schema("")},
		func(context.Context, workspace, struct{}) tool.Result { panic("kaboom") })
	res, err := ft.Run(context.Background(), nil)
	if err != nil || !res.IsError || !strings.Contains(res.Content, "internal error in boom: kaboom") {
		t.Errorf("got %+v, %v", res, err)
	}
}

func TestNewToolSanitizesOutput(t *testing.T) {
	ft := newTool(Options{Root: t.TempDir(), MaxOutput: 600}, tool.Info{Name: "t", Parameters: schema("")},
		func(context.Context, workspace, struct{}) tool.Result {
			return tool.Result{Content: "bad \xff byte " + strings.Repeat("y", 5000)}
		})
	res, _ := ft.Run(context.Background(), nil)
	if !strings.HasPrefix(res.Content, "bad \uFFFD byte") || len(res.Content) > 600 {
		t.Errorf("content %d bytes: %q", len(res.Content), res.Content[:20])
	}
}
