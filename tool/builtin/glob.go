package builtin

import (
	"path"
	"strings"
)

// globMatcher matches slash-separated relative paths against a glob:
// path.Match syntax per segment, "**" for any number of segments, and
// {a,b} alternatives. A glob without "/" matches the base name, so "*.go"
// finds Go files at any depth.
type globMatcher struct{ alts [][]string }

func newGlob(glob string) (globMatcher, error) {
	var g globMatcher
	for _, alt := range expandBraces(strings.TrimPrefix(glob, "./")) {
		segs := strings.Split(alt, "/")
		for _, s := range segs {
			if s == "**" {
				continue
			}
			if _, err := path.Match(s, ""); err != nil {
				return globMatcher{}, err
			}
		}
		if !strings.Contains(alt, "/") {
			segs = []string{"**", alt}
		}
		g.alts = append(g.alts, segs)
	}
	return g, nil
}

func (g globMatcher) match(rel string) bool {
	name := strings.Split(rel, "/")
	for _, segs := range g.alts {
		if matchSegs(segs, name) {
			return true
		}
	}
	return false
}

func matchSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if matchSegs(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// expandBraces expands {a,b} groups (not nested); a glob without braces
// expands to itself.
func expandBraces(glob string) []string {
	open := strings.IndexByte(glob, '{')
	if open < 0 {
		return []string{glob}
	}
	closing := strings.IndexByte(glob[open:], '}')
	if closing < 0 {
		return []string{glob}
	}
	closing += open
	var out []string
	for _, opt := range strings.Split(glob[open+1:closing], ",") {
		out = append(out, expandBraces(glob[:open]+opt+glob[closing+1:])...)
	}
	return out
}
