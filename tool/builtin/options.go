// Package builtin provides the tools every Talaria agent has: reading,
// writing and editing files, listing and searching the workspace, and
// running shell commands. All paths are confined to the workspace root.
package builtin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/talaria-agent/talaria/internal/setting"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/tool/sandbox"
)

// Defaults and limits for Options.
const (
	DefaultShellTimeout = 120 * time.Second
	MaxShellTimeout     = 600 * time.Second
	DefaultMaxOutput    = 32 << 10
	DefaultShell        = "/bin/sh"
	// minMaxOutput keeps room for truncation notes however small MaxOutput is set.
	minMaxOutput = 512
)

// Options configures the built-in tools.
type Options struct {
	// Root is the workspace root (absolute). Every path argument resolves
	// against it and may not leave it, through ".." or symlinks.
	Root string
	// ShellTimeout bounds a shell command (default 120s); a call's
	// "timeout_seconds" may lower or raise it, up to MaxShellTimeout.
	ShellTimeout time.Duration
	// MaxOutput is how many bytes of output a tool returns to the model
	// (default 32 KiB). Longer output keeps its head and tail, with a
	// marker saying how much of the middle was cut.
	MaxOutput int
	// Shell runs commands as Shell -c command (default /bin/sh).
	Shell string
	// Env is added to the process environment of shell commands, which is
	// otherwise built from an allow-list (sandbox.Env): never the keys,
	// tokens or Talaria settings of the process running the tools.
	Env []string
	// EnvNames are more variables of this process that shell commands may
	// see (the operator's sandbox.env).
	EnvNames []string
	// Sandbox confines shell commands and the file tools (nil: shell
	// commands run unconfined, as with mode off). A read-only sandbox
	// also refuses write_file and edit_file.
	Sandbox *sandbox.Policy
	// TextReader, when set, is where read_file and edit_file read file
	// content (an editor's possibly unsaved buffers); nil: the local disk.
	// Paths are confined to Root before it is asked.
	TextReader TextReader
	// TextWriter, when set, is where write_file and edit_file put new
	// content; nil: the local disk. A read-only sandbox refuses writes
	// before it is asked.
	TextWriter TextWriter
}

// withDefaults fills unset fields.
func (o Options) withDefaults() Options {
	if o.Root != "" {
		o.Root = filepath.Clean(o.Root)
	}
	o.ShellTimeout = setting.Or(o.ShellTimeout, DefaultShellTimeout)
	o.MaxOutput = setting.Or(o.MaxOutput, DefaultMaxOutput)
	o.MaxOutput = max(o.MaxOutput, minMaxOutput)
	if o.Shell == "" {
		o.Shell = DefaultShell
	}
	return o
}

// ErrBadRoot is returned by New when Options.Root is not an existing
// absolute directory.
var ErrBadRoot = errors.New("invalid workspace root")

// New returns all built-in tools in a fixed order: read_file, write_file,
// edit_file, list_dir, search_files, shell.
func New(opt Options) ([]tool.Tool, error) {
	if err := checkRoot(opt.Root); err != nil {
		return nil, err
	}
	return []tool.Tool{
		ReadFile(opt), WriteFile(opt), EditFile(opt),
		ListDir(opt), SearchFiles(opt), Shell(opt), Todo(),
	}, nil
}

// writesRefused returns the refusal of a file change in a read-only
// sandbox, or nil when the mode allows writes.
func (o Options) writesRefused(name string) *tool.Result {
	if o.Sandbox == nil || o.Sandbox.Mode.Writes() {
		return nil
	}
	r := tool.Errorf("refused by the sandbox: this session runs in sandbox mode %s, so %s cannot change files "+
		"(the operator sets the mode with sandbox.mode or --sandbox)", o.Sandbox.Mode, name)
	return &r
}

func checkRoot(root string) error {
	if root == "" || !filepath.IsAbs(root) {
		return fmt.Errorf("%w: %q must be an absolute path", ErrBadRoot, root)
	}
	fi, err := os.Stat(root)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadRoot, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrBadRoot, root)
	}
	return nil
}
