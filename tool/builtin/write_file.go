package builtin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/talaria-agent/talaria/tool"
)

type writeFileArgs struct {
	Path    string  `json:"path"`
	Content *string `json:"content"`
}

// WriteFile returns the write_file tool: create or overwrite a file.
func WriteFile(opt Options) tool.Tool {
	return withChangedFile(opt, newTool(opt, tool.Info{
		Name: "write_file",
		Description: "Create a file or replace its whole content. Parent directories are created. " +
			"To change part of an existing file, prefer edit_file.",
		Parameters: schema(`"path":{"type":"string","description":"File path, relative to the workspace root."},`+
			`"content":{"type":"string","description":"The complete new content of the file."}`, "path", "content"),
	}, func(ctx context.Context, ws workspace, a writeFileArgs) tool.Result {
		if r := opt.writesRefused("write_file"); r != nil {
			return *r
		}
		return writeFile(ctx, ws, a, opt.TextWriter)
	}))
}

func writeFile(ctx context.Context, ws workspace, a writeFileArgs, via TextWriter) tool.Result {
	if a.Content == nil {
		return tool.Errorf(`content is required (use "" for an empty file)`)
	}
	t, root, bad := ws.openTarget(a.Path, "write")
	if bad != nil {
		return *bad
	}
	defer root.Close()

	perm, verb := fs.FileMode(0o644), "created"
	fi, err := root.Stat(t.rel)
	switch {
	case err == nil && fi.IsDir():
		return tool.Errorf("%s is a directory; give a file path", a.Path)
	case err == nil && !fi.Mode().IsRegular():
		return tool.Errorf("%s exists and is not a regular file", a.Path)
	case err == nil:
		perm, verb = fi.Mode().Perm(), fmt.Sprintf("overwrote (was %d bytes)", fi.Size())
	case !errors.Is(err, fs.ErrNotExist):
		return tool.Errorf("cannot write %s: %v", a.Path, plainErr(err))
	}
	if via != nil {
		if err := via.WriteTextFile(ctx, ws.outerPath(t), *a.Content); err != nil {
			return tool.Errorf("cannot write %s through the editor: %v", a.Path, err)
		}
		return tool.Result{Content: fmt.Sprintf("wrote %s in the editor: %d bytes, %d lines",
			t.show(), len(*a.Content), countLines(*a.Content))}
	}
	if err := writeAtomic(root, t.rel, []byte(*a.Content), perm); err != nil {
		return tool.Errorf("cannot write %s: %v", a.Path, err)
	}
	return tool.Result{Content: fmt.Sprintf("%s %s: %d bytes, %d lines",
		verb, t.show(), len(*a.Content), countLines(*a.Content))}
}
