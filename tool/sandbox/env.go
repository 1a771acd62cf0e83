package sandbox

import (
	"fmt"
	"strings"
)

// baseEnv are the variables every tool process gets, when set.
var baseEnv = []string{"PATH", "HOME", "LANG", "TERM", "TMPDIR", "USER", "SHELL", "LOGNAME", "TZ"}

// CheckEnvName refuses a name the operator may not pass to tools: Talaria's
// own settings, telemetry settings, and anything shaped like a key or token.
func CheckEnvName(name string) error {
	u := strings.ToUpper(name)
	switch {
	case name == "" || strings.ContainsAny(name, "=\x00"):
		return fmt.Errorf("%q is not a variable name", name)
	case strings.HasPrefix(u, "TALARIA_"), strings.HasPrefix(u, "OTEL_"):
		return fmt.Errorf("%s is Talaria's own setting and never reaches tools", name)
	case secretShaped(u):
		return fmt.Errorf("%s looks like a key or token and never reaches tools "+
			"(put what the tool needs in a file it may read instead)", name)
	}
	return nil
}

func secretShaped(u string) bool {
	for _, s := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"} {
		if strings.Contains(u, s) {
			return true
		}
	}
	return false
}

// Env builds a tool process's environment from environ (os.Environ()):
// only the allow-listed names (PATH, HOME, LANG, LC_*, TERM, TMPDIR, USER,
// SHELL, LOGNAME, TZ) and the extra names the operator allowed, never a
// provider key, token or Talaria's settings. A confined process gets
// TMPDIR=/tmp (its private one). extra names that CheckEnvName refuses are
// dropped (config validation reports them first).
func Env(environ []string, extra []string, confined bool) []string {
	allow := map[string]bool{}
	for _, n := range baseEnv {
		allow[n] = true
	}
	for _, n := range extra {
		if CheckEnvName(n) == nil {
			allow[n] = true
		}
	}
	var out []string
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if confined && name == "TMPDIR" {
			continue
		}
		if allow[name] || strings.HasPrefix(name, "LC_") {
			out = append(out, kv)
		}
	}
	if confined {
		out = append(out, "TMPDIR=/tmp")
	}
	return out
}
