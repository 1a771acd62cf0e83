package tool

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/talaria-agent/talaria/internal/jsonnum"
)

// maxProblems bounds how many findings one ArgError lists; a model that got
// everything wrong needs the schema more than forty lines of complaints.
const maxProblems = 12

// problems collects validation findings up to maxProblems.
type problems struct {
	list    []string
	dropped int
}

func (p *problems) add(at, format string, a ...any) {
	if len(p.list) >= maxProblems {
		p.dropped++
		return
	}
	msg := fmt.Sprintf(format, a...)
	if at != "" {
		msg = at + ": " + msg
	}
	p.list = append(p.list, msg)
}

func (p *problems) result() []string {
	if p.dropped > 0 {
		return append(slices.Clone(p.list), fmt.Sprintf("and %d more problem(s)", p.dropped))
	}
	return p.list
}

// validate checks v against s and returns v, possibly rewritten: an integer
// sent as 3.0 becomes 3 so that tools decoding into int do not choke on it.
// changed reports such a rewrite.
func (s *schema) validate(v any, at string, p *problems) (out any, changed bool) {
	if s.never {
		p.add(at, "no value is allowed here")
		return v, false
	}
	if len(s.types) > 0 && !s.typeMatches(v) {
		p.add(at, "expected %s, got %s%s", strings.Join(s.types, " or "), describe(v), typeHint(s.types, v))
		return v, false
	}
	if len(s.enum) > 0 && !slices.ContainsFunc(s.enum, func(e any) bool { return jsonEqual(e, v) }) {
		p.add(at, "must be one of %s, got %s", strings.Join(s.enumText, ", "), describe(v))
	}
	switch x := v.(type) {
	case map[string]any:
		return s.validateObject(x, at, p)
	case []any:
		return s.validateArray(x, at, p)
	case string:
		s.validateString(x, at, p)
	case json.Number:
		return s.validateNumber(x, at, p)
	}
	return v, false
}

func (s *schema) typeMatches(v any) bool {
	return slices.ContainsFunc(s.types, func(t string) bool { return hasType(v, t) })
}

func hasType(v any, t string) bool {
	switch x := v.(type) {
	case map[string]any:
		return t == "object"
	case []any:
		return t == "array"
	case string:
		return t == "string"
	case bool:
		return t == "boolean"
	case nil:
		return t == "null"
	case json.Number:
		if t == "number" {
			return true
		}
		if t == "integer" {
			r, ok := parseRat(x.String())
			return ok && r.IsInt()
		}
	}
	return false
}

func (s *schema) validateObject(m map[string]any, at string, p *problems) (any, bool) {
	changed := false
	for _, k := range s.required {
		if _, ok := m[k]; !ok {
			p.add(at, "missing required property %q", k)
		}
	}
	for _, k := range s.propOrder {
		if val, ok := m[k]; ok {
			if nv, c := s.props[k].validate(val, at+"/"+escapePointer(k), p); c {
				m[k], changed = nv, true
			}
		}
	}
	var extra []string
	for k := range m {
		if _, known := s.props[k]; !known {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra) // map order is random; messages must not be
	for _, k := range extra {
		switch {
		case s.noExtra:
			p.add(at, "unexpected property %q%s", k, allowedHint(s.propOrder))
		case s.extra != nil:
			if nv, c := s.extra.validate(m[k], at+"/"+escapePointer(k), p); c {
				m[k], changed = nv, true
			}
		}
	}
	return m, changed
}

func allowedHint(props []string) string {
	if len(props) == 0 {
		return " (this object takes no properties)"
	}
	return " (allowed: " + strings.Join(props, ", ") + ")"
}

func (s *schema) validateArray(a []any, at string, p *problems) (any, bool) {
	if s.minItems >= 0 && len(a) < s.minItems {
		p.add(at, "must have at least %s, got %d", plural(s.minItems, "item"), len(a))
	}
	if s.maxItems >= 0 && len(a) > s.maxItems {
		p.add(at, "must have at most %s, got %d", plural(s.maxItems, "item"), len(a))
	}
	changed := false
	if s.items != nil {
		for i, el := range a {
			if nv, c := s.items.validate(el, fmt.Sprintf("%s/%d", at, i), p); c {
				a[i], changed = nv, true
			}
		}
	}
	return a, changed
}

func (s *schema) validateString(str, at string, p *problems) {
	n := utf8.RuneCountInString(str) // JSON Schema counts characters, not bytes
	if s.minLength >= 0 && n < s.minLength {
		p.add(at, "must be at least %s long, got %d", plural(s.minLength, "character"), n)
	}
	if s.maxLength >= 0 && n > s.maxLength {
		p.add(at, "must be at most %s long, got %d", plural(s.maxLength, "character"), n)
	}
}

func (s *schema) validateNumber(n json.Number, at string, p *problems) (any, bool) {
	r, ok := parseRat(n.String())
	if !ok {
		p.add(at, "expected a number, got %s", n)
		return n, false
	}
	if s.minimum != nil && r.Cmp(s.minimum) < 0 {
		p.add(at, "must be >= %s, got %s", ratText(s.minimum), n)
	}
	if s.maximum != nil && r.Cmp(s.maximum) > 0 {
		p.add(at, "must be <= %s, got %s", ratText(s.maximum), n)
	}
	// An integral value written with a fraction or exponent (3.0, 1e2) is a
	// valid integer, but Go's decoder refuses it for int fields: rewrite it.
	if slices.Contains(s.types, "integer") && r.IsInt() && n.String() != r.Num().String() {
		return json.Number(r.Num().String()), true
	}
	return n, false
}

func ratText(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return fmt.Sprint(f)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// describe renders a value for a message: its type and, for scalars, a
// shortened literal.
func describe(v any) string {
	switch x := v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string " + shorten(x, 40)
	case bool:
		return fmt.Sprintf("boolean %t", x)
	case nil:
		return "null"
	case json.Number:
		return "number " + x.String()
	}
	return fmt.Sprintf("%T", v)
}

// shorten quotes s, cutting it to about n runes.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return fmt.Sprintf("%q", s)
	}
	r := []rune(s)
	return fmt.Sprintf("%q…", string(r[:n]))
}

// typeHint adds advice for the mistakes models make most: quoting numbers
// and booleans, and sending objects or arrays as JSON text.
func typeHint(want []string, v any) string {
	str, ok := v.(string)
	if !ok {
		return ""
	}
	decoded, err := jsonnum.Decode([]byte(str))
	if err != nil {
		return ""
	}
	for _, t := range want {
		if hasType(decoded, t) {
			switch t {
			case "object", "array":
				return fmt.Sprintf(" (send the %s itself, not a string containing JSON)", t)
			default:
				return fmt.Sprintf(" (send the %s without quotes)", t)
			}
		}
	}
	return ""
}

// jsonEqual compares decoded JSON values; numbers compare by value.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		rx, ok1 := parseRat(x.String())
		ry, ok2 := parseRat(y.String())
		return ok1 && ok2 && rx.Cmp(ry) == 0
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !jsonEqual(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, jsonEqual)
	default:
		return a == b
	}
}

// maxExponent bounds the exponent of numbers parsed exactly: big.Rat
// would otherwise build a gigantic integer for "1e999999999".
const maxExponent = 400

// parseRat parses a JSON number exactly; ok is false for a number whose
// exponent is out of any sensible range.
func parseRat(s string) (r *big.Rat, ok bool) {
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || exp > maxExponent || exp < -maxExponent {
			return nil, false
		}
	}
	return new(big.Rat).SetString(s)
}
