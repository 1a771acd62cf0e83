package acp

import (
	"context"
	"fmt"
	"sync"

	"github.com/talaria-agent/talaria/tool/builtin"
)

// editorFiles reads and writes files through the client
// (fs/read_text_file, fs/write_text_file), so the agent sees and changes
// the editor's buffers, unsaved edits included. The file tools confine a
// path to the session's cwd before they ask; nothing the client answers
// widens that.
type editorFiles struct {
	s     *Server
	ss    *session
	read  bool // the client offered fs/read_text_file
	write bool // and fs/write_text_file

	mu       sync.Mutex
	lastRead map[string]string // what the editor last returned, by path
	written  map[string]edit   // writes not yet shown as a diff, by path
}

// edit is one write through the editor, for the tool call's diff: the disk
// does not have it, so the diff cannot be read back from there.
type edit struct{ old, new *string }

func newEditorFiles(s *Server, ss *session, fs FileSystemCapabilities) *editorFiles {
	return &editorFiles{s: s, ss: ss, read: fs.ReadTextFile, write: fs.WriteTextFile,
		lastRead: map[string]string{}, written: map[string]edit{}}
}

// takeWrite returns and forgets the last write to path.
func (e *editorFiles) takeWrite(path string) (edit, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	w, ok := e.written[path]
	delete(e.written, path)
	return w, ok
}

// ReadTextFile asks for the whole file: the tool numbers and windows the
// lines itself, exactly as for a file on disk.
func (e *editorFiles) ReadTextFile(ctx context.Context, path string) (string, error) {
	var resp ReadTextFileResponse
	if err := e.s.conn.Call(ctx, MethodReadTextFile, ReadTextFileRequest{SessionID: e.ss.id, Path: path}, &resp); err != nil {
		return "", fmt.Errorf("%s: %w", MethodReadTextFile, err)
	}
	if len(resp.Content) <= maxDiffBytes {
		e.mu.Lock()
		e.lastRead[path] = resp.Content
		e.mu.Unlock()
	}
	return resp.Content, nil
}

func (e *editorFiles) WriteTextFile(ctx context.Context, path, content string) error {
	req := WriteTextFileRequest{SessionID: e.ss.id, Path: path, Content: content}
	if err := e.s.conn.Call(ctx, MethodWriteTextFile, req, nil); err != nil {
		return fmt.Errorf("%s: %w", MethodWriteTextFile, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var w edit
	if old, ok := e.lastRead[path]; ok {
		w.old = &old
	}
	delete(e.lastRead, path)
	if len(content) <= maxDiffBytes {
		w.new = &content
	}
	e.written[path] = w
	return nil
}

// editorIO returns what the client offered of its file system for ss;
// each is nil when not offered, so the tools use the disk.
func (e *editorFiles) editorIO() (builtin.TextReader, builtin.TextWriter) {
	var r builtin.TextReader
	var w builtin.TextWriter
	if e.read {
		r = e
	}
	if e.write {
		w = e
	}
	return r, w
}
