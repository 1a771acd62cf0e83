package tool

import (
	"errors"
	"fmt"
	"strings"
)

// Registration errors, wrapped (with %w) by Register and NewRegistry so
// callers can tell them apart with errors.Is.
var (
	// ErrInvalidName: the name does not match ^[a-zA-Z0-9_-]{1,64}$, which
	// is what both OpenAI and Anthropic accept for function names.
	ErrInvalidName = errors.New("invalid tool name")
	// ErrDuplicateName: a tool with that name is already registered.
	ErrDuplicateName = errors.New("duplicate tool name")
	// ErrInvalidSchema: Info().Parameters is not a usable JSON object schema.
	ErrInvalidSchema = errors.New("invalid tool parameter schema")
)

// ArgError reports arguments the model sent that do not fit the tool's
// schema. Its text is written for the model: what is wrong and what the tool
// expects, so the next call can be right.
type ArgError struct {
	Tool string
	// Problems are the individual findings, each prefixed with the
	// JSON-pointer-ish path of the offending value ("/opts/depth: …").
	Problems []string
	// Expected is a compact rendering of the schema, e.g.
	// {"path": string, "start_line"?: integer}.
	Expected string
}

// Error returns the model-facing text.
func (e *ArgError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid arguments for tool %q: ", e.Tool)
	b.WriteString(strings.Join(e.Problems, "; "))
	if e.Expected != "" {
		b.WriteString("; expected arguments: ")
		b.WriteString(e.Expected)
	}
	return b.String()
}

// UnknownToolError reports a call to a tool that is not registered.
type UnknownToolError struct {
	Name      string
	Available []string
}

// Error returns the model-facing text, with a suggestion when the name is
// close to a registered one (models often vary case or separators).
func (e *UnknownToolError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "unknown tool %q", e.Name)
	if s := closestName(e.Name, e.Available); s != "" {
		fmt.Fprintf(&b, " (did you mean %q?)", s)
	}
	if len(e.Available) == 0 {
		b.WriteString("; no tools are available")
	} else {
		b.WriteString("; available tools: ")
		b.WriteString(strings.Join(e.Available, ", "))
	}
	return b.String()
}

// closestName returns the candidate nearest to name when it is plausibly a
// misspelling of it, else "".
func closestName(name string, candidates []string) string {
	norm := func(s string) string {
		return strings.NewReplacer("-", "", "_", "", " ", "").Replace(strings.ToLower(s))
	}
	best, bestDist := "", -1
	for _, c := range candidates {
		if norm(c) == norm(name) {
			return c
		}
		d := editDistance(strings.ToLower(name), strings.ToLower(c))
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	if bestDist >= 0 && bestDist <= max(1, len(best)/4) {
		return best
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
