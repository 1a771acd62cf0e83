package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ExpandPath expands a leading ~ (the user's home directory) and $VAR or
// ${VAR} (from getenv) in a path setting, the way a shell would have if the
// value had been typed there. A variable that is not set is an error, not
// an empty string: "$DATA/state.db" must not quietly become "/state.db".
// what names the setting in the error.
func ExpandPath(what, s string, getenv func(string) string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	var missing []string
	s = os.Expand(s, func(name string) string {
		v := getenv(name)
		if v == "" {
			missing = append(missing, "$"+name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("%s uses %s, which is not set", what, strings.Join(missing, ", "))
	}
	if s == "~" || strings.HasPrefix(s, "~/") || strings.HasPrefix(s, `~\`) {
		home := getenv("HOME")
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("%s starts with ~ but the home directory is unknown: %w", what, err)
			}
			home = h
		}
		s = filepath.Join(home, s[1:])
	} else if strings.HasPrefix(s, "~") {
		return "", fmt.Errorf("%s is %q: only ~ (your own home directory) is expanded; write the full path", what, s)
	}
	return s, nil
}

// ResolveUserPath is the rule for a path typed at a shell, in a flag or an
// environment variable (--database, --workspace, TALARIA_DB,
// TALARIA_DATABASE_URL=sqlite://PATH): ~ and $VAR expanded, a relative path
// resolved against the current directory, as the shell's own tools do.
// (A config file's database path is stricter: resolveDatabasePath.)
func ResolveUserPath(what, s string, getenv func(string) string) (string, error) {
	p, err := ExpandPath(what, s, getenv)
	if err != nil || p == "" {
		return p, err
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	return abs, nil
}

// ResolveDatabaseURL applies a path rule (ResolveUserPath, or
// resolveDatabasePath for a config file) to the file of a sqlite:// URL;
// other URLs pass unchanged.
func ResolveDatabaseURL(what, u string, getenv func(string) string) (string, error) {
	return resolveSQLiteURL(what, u, getenv, ResolveUserPath)
}

func resolveSQLiteURL(what, u string, getenv func(string) string, rule func(string, string, func(string) string) (string, error)) (string, error) {
	const scheme = "sqlite://"
	rest, ok := strings.CutPrefix(strings.TrimSpace(u), scheme)
	if !ok || rest == "" {
		return u, nil
	}
	p, err := rule(what, rest, getenv)
	if err != nil {
		return "", err
	}
	return scheme + p, nil
}

// explicitRelative reports whether a relative path says so: ./x or ../x.
func explicitRelative(s string) bool {
	return s == "." || s == ".." || strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../") ||
		strings.HasPrefix(s, `.\`) || strings.HasPrefix(s, `..\`)
}

// resolveDatabasePath expands the database path and makes it absolute. A
// bare relative path ("state.db", "data/state.db") is refused: each working
// directory would quietly get its own database and "continue" would lose
// sessions. "./state.db" says the current directory is meant.
func resolveDatabasePath(what, s string, getenv func(string) string) (string, error) {
	p, err := ExpandPath(what, s, getenv)
	if err != nil || p == "" {
		return p, err
	}
	if !filepath.IsAbs(p) {
		if !explicitRelative(p) {
			return "", fmt.Errorf("%s is the relative path %q: each directory you run in would get its own database; use an absolute path, ~/…, or ./%s to mean the current directory", what, p, p)
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", fmt.Errorf("%s: %w", what, err)
		}
		p = abs
	}
	return filepath.Clean(p), nil
}
