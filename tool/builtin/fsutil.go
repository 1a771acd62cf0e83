package builtin

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// plainErr drops the operation and path that *fs.PathError adds: messages
// name the path as the model gave it instead of an internal one.
func plainErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// writeAtomic replaces rel under root with data: it writes a temporary file
// in the same directory, syncs it and renames it over the target, so a
// crash never leaves a half-written file. Missing parents are created.
func writeAtomic(root *os.Root, rel string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(rel)
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create parent directories: %w", plainErr(err))
	}
	var f *os.File
	var tmp string
	for range 10 {
		tmp = filepath.Join(dir, fmt.Sprintf(".%s.tmp-%08x", filepath.Base(rel), rand.Uint32()))
		var err error
		f, err = root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create temporary file: %w", plainErr(err))
		}
	}
	if f == nil {
		return errors.New("create temporary file: too many name collisions")
	}
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = root.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write: %w", plainErr(err))
	}
	// OpenFile's permissions pass through the umask; an existing file's
	// mode is kept exactly.
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("set permissions: %w", plainErr(err))
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync: %w", plainErr(err))
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close: %w", plainErr(err))
	}
	if err := root.Rename(tmp, rel); err != nil {
		_ = root.Remove(tmp)
		ok = true // already closed and removed
		return fmt.Errorf("rename into place: %w", plainErr(err))
	}
	ok = true
	return nil
}
