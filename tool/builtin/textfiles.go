package builtin

import (
	"context"
	"path/filepath"
)

// TextReader reads a whole text file from somewhere other than the local
// disk: an editor's buffers (ACP's fs/read_text_file). path is absolute and
// already confined to the workspace; the reader never widens that.
type TextReader interface {
	ReadTextFile(ctx context.Context, path string) (string, error)
}

// TextWriter replaces a whole text file somewhere other than the local
// disk (ACP's fs/write_text_file); path is absolute and already confined.
type TextWriter interface {
	WriteTextFile(ctx context.Context, path, content string) error
}

// outerPath is the absolute path an outside reader or writer is given: the
// root as configured (the editor's cwd, as the editor spells it) joined
// with the path's place under the resolved root, so a symlinked root
// (/tmp on macOS) still names the editor's buffer.
func (w workspace) outerPath(t target) string {
	return filepath.Join(w.root, t.rel)
}
