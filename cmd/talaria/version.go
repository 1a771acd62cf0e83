package main

import (
	"runtime/debug"
	"strings"
)

// versionString is the version `talaria version` prints: the -ldflags
// value when set, else what the Go toolchain embedded in the binary — the
// module version (go install …@v1.2.3) or the VCS revision of the checkout
// it was built from (go build), so a binary never just says "dev".
func versionString() string {
	bi, _ := debug.ReadBuildInfo()
	return buildVersion(version, bi)
}

func buildVersion(ldflags string, bi *debug.BuildInfo) string {
	if ldflags != "" && ldflags != "dev" {
		return ldflags
	}
	if bi == nil {
		return "dev"
	}
	v := bi.Main.Version
	// go build in a checkout (Go 1.24+) embeds a pseudo-version
	// (v0.0.0-20261201100000-4514ede01234+dirty); the VCS settings say the
	// same thing in the README's words, dev-<rev>. Without them (go install
	// …@<commit>) the pseudo-version is all there is.
	if v != "" && v != "(devel)" && !(isPseudoVersion(v) && hasVCS(bi)) {
		return v
	}
	var rev, at string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v = "dev-" + rev
	if dirty {
		v += "-modified"
	}
	if at != "" {
		v += " (" + at + ")"
	}
	return v
}

func hasVCS(bi *debug.BuildInfo) bool {
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && s.Value != "" {
			return true
		}
	}
	return false
}

// isPseudoVersion reports whether v has the shape Go gives a module version
// derived from a commit: vX.Y.Z-[pre.]yyyymmddhhmmss-abcdefabcdef, with an
// optional +dirty or other build suffix.
func isPseudoVersion(v string) bool {
	v, _, _ = strings.Cut(v, "+")
	i := strings.LastIndexByte(v, '-')
	if i < 0 || len(v)-i-1 != 12 || !isHexDigits(v[i+1:]) {
		return false
	}
	rest := v[:i]
	if len(rest) < 14 {
		return false
	}
	stamp := rest[len(rest)-14:]
	for _, c := range stamp {
		if c < '0' || c > '9' {
			return false
		}
	}
	sep := rest[:len(rest)-14]
	return strings.HasPrefix(sep, "v") && (strings.HasSuffix(sep, "-") || strings.HasSuffix(sep, "."))
}

func isHexDigits(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
