package builtin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/talaria-agent/talaria/tool"
)

// maxSymlinkHops bounds symlink chains, as the kernel does (ELOOP).
const maxSymlinkHops = 40

// workspace confines paths to a root directory.
type workspace struct{ root string }

// target is a path argument resolved inside the workspace.
type target struct {
	root string // the workspace root, symlinks resolved
	real string // the absolute path, symlinks resolved
	rel  string // real relative to root, for os.Root and for display
}

// show is the path as the model should see it: relative to the root,
// slash-separated.
func (t target) show() string { return filepath.ToSlash(t.rel) }

// open opens the root for traversal-safe I/O: even if something swaps a
// directory for a symlink after resolve, os.Root will not follow it out.
func (t target) open() (*os.Root, error) { return os.OpenRoot(t.root) }

// openTarget resolves path and opens the root for I/O on it. A failure is
// returned as the result for the model; verb names what could not be done
// ("cannot <verb> <path>: …"). The caller closes the root.
func (w workspace) openTarget(path, verb string) (target, *os.Root, *tool.Result) {
	t, err := w.resolve(path)
	if err != nil {
		r := tool.Errorf("%v", err)
		return target{}, nil, &r
	}
	root, err := t.open()
	if err != nil {
		r := tool.Errorf("cannot %s %s: %v", verb, path, err)
		return target{}, nil, &r
	}
	return t, root, nil
}

// realRoot returns the root with symlinks resolved (/tmp is a symlink on
// macOS), checking it is still a usable directory.
func (w workspace) realRoot() (string, error) {
	if err := checkRoot(w.root); err != nil {
		return "", fmt.Errorf("the workspace root is not usable: %w", err)
	}
	real, err := filepath.EvalSymlinks(w.root)
	if err != nil {
		return "", fmt.Errorf("the workspace root is not usable: %w", err)
	}
	return real, nil
}

// resolve turns a path argument into a target inside the workspace, or an
// error that tells the model why not. Relative paths resolve against the
// root; absolute ones must lie under it; ".." may not climb out; symlinks,
// including dangling ones and those in not-yet-existing paths' parents, may
// not lead out.
func (w workspace) resolve(p string) (target, error) {
	root, err := w.realRoot()
	if err != nil {
		return target{}, err
	}
	if strings.TrimSpace(p) == "" {
		return target{}, errors.New("path is empty")
	}
	if strings.ContainsRune(p, 0) {
		return target{}, errors.New("path contains a NUL byte")
	}
	var abs string
	if filepath.IsAbs(p) {
		abs = filepath.Clean(p)
		if !within(w.root, abs) && !within(root, abs) {
			return target{}, fmt.Errorf("path is outside the workspace: %s (the workspace is %s; use a path relative to it)", p, w.root)
		}
	} else {
		abs = filepath.Join(w.root, p)
		if !within(w.root, abs) {
			return target{}, fmt.Errorf("path escapes the workspace: %s", p)
		}
	}
	real, err := realPath(abs, maxSymlinkHops)
	if err != nil {
		return target{}, fmt.Errorf("cannot resolve path %s: %w", p, err)
	}
	if !within(root, real) {
		return target{}, fmt.Errorf("path escapes the workspace through a symlink: %s resolves to %s", p, real)
	}
	rel, err := filepath.Rel(root, real)
	if err != nil {
		return target{}, fmt.Errorf("cannot resolve path %s: %w", p, err)
	}
	return target{root: root, real: real, rel: rel}, nil
}

// within reports whether p is dir or lies below it; both must be clean and
// absolute.
func within(dir, p string) bool {
	if p == dir {
		return true
	}
	if !strings.HasSuffix(dir, string(filepath.Separator)) {
		dir += string(filepath.Separator)
	}
	return strings.HasPrefix(p, dir)
}

// realPath resolves symlinks in the longest existing prefix of abs and
// appends the rest. Unlike filepath.EvalSymlinks it also follows dangling
// symlinks, because writing through one would create its target.
func realPath(abs string, hops int) (string, error) {
	prefix, rest := abs, ""
	for {
		fi, err := os.Lstat(prefix)
		if err == nil {
			real, err := filepath.EvalSymlinks(prefix)
			if err != nil {
				if fi.Mode()&fs.ModeSymlink == 0 || !errors.Is(err, fs.ErrNotExist) {
					return "", err
				}
				if real, err = followDangling(prefix, hops); err != nil {
					return "", err
				}
			}
			return filepath.Join(real, rest), nil
		}
		parent := filepath.Dir(prefix)
		if parent == prefix { // reached "/" without finding anything
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(prefix), rest)
		prefix = parent
	}
}

// followDangling resolves a symlink whose target does not exist.
func followDangling(link string, hops int) (string, error) {
	if hops <= 0 {
		return "", fmt.Errorf("too many levels of symbolic links")
	}
	dest, err := os.Readlink(link)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(dest) {
		dir, err := filepath.EvalSymlinks(filepath.Dir(link))
		if err != nil {
			return "", err
		}
		dest = filepath.Join(dir, dest)
	}
	return realPath(filepath.Clean(dest), hops-1)
}
