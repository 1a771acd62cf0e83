package builtin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/tool/sandbox"
)

// buffers stands in for an editor: open buffers by absolute path, and a log
// of what it was asked.
type buffers struct {
	mu    sync.Mutex
	files map[string]string
	asked []string
	fail  error
}

func (b *buffers) ReadTextFile(_ context.Context, path string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asked = append(b.asked, "read "+path)
	if b.fail != nil {
		return "", b.fail
	}
	s, ok := b.files[path]
	if !ok {
		return "", errors.New("no such buffer")
	}
	return s, nil
}

func (b *buffers) WriteTextFile(_ context.Context, path, content string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asked = append(b.asked, "write "+path)
	if b.fail != nil {
		return b.fail
	}
	b.files[path] = content
	return nil
}

func TestFileToolsThroughEditor(t *testing.T) {
	root, outside := testWS(t)
	writeFiles(t, root, map[string]string{"notes.txt": "saved on disk\n", "code.go": "package a\n\nvar x = 1\n"})
	writeFiles(t, outside, map[string]string{"secret.txt": "secret\n"})
	notes, code, fresh := filepath.Join(root, "notes.txt"), filepath.Join(root, "code.go"), filepath.Join(root, "sub", "new.txt")
	ro := &sandbox.Policy{Mode: sandbox.ReadOnly}

	tests := []struct {
		name      string
		sandbox   *sandbox.Policy
		fail      error
		tool      func(Options) tool.Tool
		args      any
		wantErr   bool
		want      string   // in the result
		wantAsked []string // the editor's log
		wantBuf   map[string]string
		wantDisk  map[string]string
	}{
		{name: "read shows the unsaved buffer", args: map[string]any{"path": "notes.txt", "start_line": 2},
			tool: func(o Options) tool.Tool { return ReadFile(o) }, want: "2\tsecond unsaved line",
			wantAsked: []string{"read " + notes}},
		{name: "write goes to the buffer, not the disk", args: map[string]any{"path": "sub/new.txt", "content": "fresh\n"},
			tool: func(o Options) tool.Tool { return WriteFile(o) }, want: "wrote sub/new.txt in the editor",
			wantAsked: []string{"write " + fresh}, wantBuf: map[string]string{fresh: "fresh\n"},
			wantDisk: map[string]string{"sub/new.txt": ""}},
		{name: "edit reads and writes the buffer", args: map[string]any{"path": "code.go", "old_string": "x = 2", "new_string": "x = 3"},
			tool: func(o Options) tool.Tool { return EditFile(o) }, want: "var x = 3",
			wantAsked: []string{"read " + code, "write " + code}, wantBuf: map[string]string{code: "package a\n\nvar x = 3\n"},
			wantDisk: map[string]string{"code.go": "package a\n\nvar x = 1\n"}},
		{name: "outside the workspace is refused before asking", args: map[string]any{"path": filepath.Join(outside, "secret.txt")},
			tool: func(o Options) tool.Tool { return ReadFile(o) }, wantErr: true, want: "outside the workspace"},
		{name: "climbing out is refused before asking", args: map[string]any{"path": "../outside/x.txt", "content": "x"},
			tool: func(o Options) tool.Tool { return WriteFile(o) }, wantErr: true, want: "escapes the workspace"},
		{name: "read-only sandbox refuses before asking", sandbox: ro, args: map[string]any{"path": "notes.txt", "content": "x"},
			tool: func(o Options) tool.Tool { return WriteFile(o) }, wantErr: true, want: "refused by the sandbox"},
		{name: "read-only sandbox refuses edits too", sandbox: ro, args: map[string]any{"path": "code.go", "old_string": "x = 2", "new_string": "y"},
			tool: func(o Options) tool.Tool { return EditFile(o) }, wantErr: true, want: "refused by the sandbox"},
		{name: "an editor error is the tool's error", fail: errors.New("buffer is locked"), args: map[string]any{"path": "notes.txt", "content": "x"},
			tool: func(o Options) tool.Tool { return WriteFile(o) }, wantErr: true, want: "buffer is locked",
			wantAsked: []string{"write " + notes}, wantDisk: map[string]string{"notes.txt": "saved on disk\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ed := &buffers{fail: tt.fail, files: map[string]string{
				notes: "first unsaved line\nsecond unsaved line\n",
				code:  "package a\n\nvar x = 2\n",
			}}
			opt := Options{Root: root, Sandbox: tt.sandbox, TextReader: ed, TextWriter: ed}
			res := call(t, tt.tool(opt), tt.args)
			if res.IsError != tt.wantErr || !strings.Contains(res.Content, tt.want) {
				t.Fatalf("result (error %v) = %q, want error %v containing %q", res.IsError, res.Content, tt.wantErr, tt.want)
			}
			if strings.Join(ed.asked, "; ") != strings.Join(tt.wantAsked, "; ") {
				t.Errorf("the editor was asked %q, want %q", ed.asked, tt.wantAsked)
			}
			for p, want := range tt.wantBuf {
				if ed.files[p] != want {
					t.Errorf("buffer %s = %q, want %q", p, ed.files[p], want)
				}
			}
			for p, want := range tt.wantDisk {
				got, err := os.ReadFile(filepath.Join(root, p))
				if want == "" {
					if !errors.Is(err, os.ErrNotExist) {
						t.Errorf("%s is on disk (%q, %v); the write should have gone to the editor only", p, got, err)
					}
				} else if string(got) != want {
					t.Errorf("%s on disk = %q, want %q", p, got, want)
				}
			}
		})
	}
}
