package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/talaria-agent/talaria/internal/jsonnum"
)

// Validate checks raw argument text from the model against the tool's
// schema. It returns the arguments to pass to Run, normalized: "", "null"
// and whitespace become "{}", a double-encoded object (a JSON string holding
// the object) is unwrapped, and integers written as 3.0 become 3. Otherwise
// it returns an *ArgError written for the model, or an *UnknownToolError
// listing the available tools.
func (r *Registry) Validate(name, args string) (json.RawMessage, error) {
	e := r.lookup(name)
	if e == nil {
		return nil, &UnknownToolError{Name: name, Available: r.Names()}
	}
	return validateArgs(name, e.schema, e.expected, args)
}

// validateArgs is Validate for one tool's parsed schema; a Func validates
// with it too when called directly.
func validateArgs(name string, s *schema, expected, args string) (json.RawMessage, error) {
	fail := func(problems ...string) error {
		return &ArgError{Tool: name, Problems: problems, Expected: expected}
	}

	text := strings.TrimSpace(args)
	if text == "" || text == "null" {
		text = "{}"
	}
	if strings.HasPrefix(text, `"`) {
		inner, problem := unwrapString(text)
		if problem != "" {
			return nil, fail(problem)
		}
		text = inner
	}

	var raw json.RawMessage
	if err := json.Unmarshal([]byte(text), &raw); err != nil {
		return nil, fail(syntaxProblem(text, err))
	}
	v, err := jsonnum.Decode(raw)
	if err != nil { // unreachable after Unmarshal validated it; kept for safety
		return nil, fail(syntaxProblem(text, err))
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fail("arguments must be a JSON object, got " + describe(v))
	}

	var p problems
	out, changed := s.validate(obj, "", &p)
	if len(p.list) > 0 {
		return nil, fail(p.result()...)
	}
	if !changed {
		return json.RawMessage(text), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // arguments may hold code; keep <, > and & readable
	if err := enc.Encode(out); err != nil {
		return nil, fmt.Errorf("validate %q: re-encode arguments: %w", name, err)
	}
	return json.RawMessage(bytes.TrimSpace(buf.Bytes())), nil
}

// unwrapString handles models that send the arguments object encoded as a
// JSON string ("{\"path\": \"a\"}"). It returns the inner text, or a
// problem for the model when the string does not hold an object.
func unwrapString(text string) (inner, problem string) {
	var s string
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		return "", syntaxProblem(text, err)
	}
	s = strings.TrimSpace(s)
	switch {
	case s == "" || s == "null":
		return "{}", ""
	case strings.HasPrefix(s, "{"):
		if err := json.Unmarshal([]byte(s), new(json.RawMessage)); err != nil {
			return "", "arguments are a JSON string whose content is not a valid JSON object: " +
				strings.TrimPrefix(syntaxProblem(s, err), "arguments are not valid JSON: ")
		}
		return s, ""
	default:
		return "", "arguments must be a JSON object, got string " + shorten(s, 40)
	}
}

// syntaxProblem explains a JSON decoding failure with its position, in
// terms a model can act on.
func syntaxProblem(text string, err error) string {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return "arguments are not valid JSON: " + err.Error()
	}
	off := int(se.Offset)
	if off >= len(text) && strings.Contains(se.Error(), "unexpected end") {
		return fmt.Sprintf("arguments are not valid JSON: the text ends early at offset %d "+
			"(truncated, or an unclosed brace, bracket or quote)", off)
	}
	return fmt.Sprintf("arguments are not valid JSON: %s at offset %d, near %s", se.Error(), off, excerpt(text, off))
}

// excerpt quotes text around offset off, marking the offset with "⟨here⟩".
func excerpt(text string, off int) string {
	off = min(max(off, 0), len(text))
	start, end := max(0, off-24), min(len(text), off+12)
	for start > 0 && !utf8.RuneStart(text[start]) {
		start--
	}
	for end < len(text) && !utf8.RuneStart(text[end]) {
		end++
	}
	// The syntax error's offset is just past the offending byte.
	mark := max(off-1, start)
	for mark > start && !utf8.RuneStart(text[mark]) {
		mark--
	}
	return fmt.Sprintf("%q", text[start:mark]+"⟨here⟩"+text[mark:end])
}
