package main

import "runtime/debug"

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
	if v := bi.Main.Version; v != "" && v != "(devel)" {
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
	v := "dev-" + rev
	if dirty {
		v += "-modified"
	}
	if at != "" {
		v += " (" + at + ")"
	}
	return v
}
