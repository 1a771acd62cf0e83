package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"

	"github.com/talaria-agent/talaria/internal/jsonnum"
)

// schema is the parsed subset of JSON Schema that tool parameters use.
// Keywords outside the subset (title, default, format, $ref, anyOf …) are
// ignored rather than rejected, so schemas written for other runtimes (MCP
// servers, generated schemas) still register; they are simply not enforced.
type schema struct {
	never bool     // the boolean schema false
	types []string // allowed JSON types; empty allows any

	props     map[string]*schema
	propOrder []string // as written, so messages and Expected follow the author's order
	required  []string
	// noExtra is additionalProperties:false; extra is a schema for them.
	noExtra bool
	extra   *schema

	enum     []any    // decoded with UseNumber
	enumText []string // compact JSON of each enum value, for messages

	items *schema

	minimum, maximum     *big.Rat
	minLength, maxLength int // -1 when unset
	minItems, maxItems   int // -1 when unset
}

// jsonTypes are the type names the validator knows.
var jsonTypes = []string{"object", "string", "integer", "number", "boolean", "array", "null"}

// parseRootSchema parses a tool's parameter schema, which must be an object
// schema: that is what every provider's function-calling API requires.
func parseRootSchema(raw []byte) (*schema, error) {
	s, err := parseSchema(raw, "")
	if err != nil {
		return nil, err
	}
	if s.never || len(s.types) != 1 || s.types[0] != "object" {
		return nil, errors.New(`the root must be an object schema with "type": "object"`)
	}
	return s, nil
}

func parseSchema(raw []byte, at string) (*schema, error) {
	raw = bytes.TrimSpace(raw)
	switch string(raw) {
	case "true":
		return &schema{minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}, nil
	case "false":
		return &schema{never: true, minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}, nil
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("%s: a schema must be a JSON object", pathOrRoot(at))
	}
	var kw map[string]json.RawMessage
	if err := json.Unmarshal(raw, &kw); err != nil {
		return nil, fmt.Errorf("%s: %w", pathOrRoot(at), err)
	}
	s := &schema{minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}
	p := schemaParser{kw: kw, at: at}
	p.types(s)
	p.properties(s)
	p.stringList("required", &s.required)
	p.additional(s)
	p.enum(s)
	if v, ok := kw["items"]; ok && bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")) {
		// The tuple form (an array of schemas) is outside the subset and
		// left unenforced.
		s.items, p.err = keepFirst(p.err, v, at+"/items")
	}
	p.number("minimum", &s.minimum)
	p.number("maximum", &s.maximum)
	p.count("minLength", &s.minLength)
	p.count("maxLength", &s.maxLength)
	p.count("minItems", &s.minItems)
	p.count("maxItems", &s.maxItems)
	if p.err != nil {
		return nil, p.err
	}
	return s, nil
}

// keepFirst parses a sub-schema unless an earlier keyword already failed.
func keepFirst(prev error, raw []byte, at string) (*schema, error) {
	if prev != nil {
		return nil, prev
	}
	return parseSchema(raw, at)
}

// schemaParser reads keywords of one schema object, keeping the first error.
type schemaParser struct {
	kw  map[string]json.RawMessage
	at  string
	err error
}

func (p *schemaParser) fail(key, format string, a ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("%s: %q %s", pathOrRoot(p.at), key, fmt.Sprintf(format, a...))
	}
}

func (p *schemaParser) types(s *schema) {
	raw, ok := p.kw["type"]
	if !ok {
		return
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		s.types = []string{one}
	} else if json.Unmarshal(raw, &s.types) != nil || len(s.types) == 0 {
		p.fail("type", "must be a type name or a non-empty array of them")
		return
	}
	for _, t := range s.types {
		if !slices.Contains(jsonTypes, t) {
			p.fail("type", "has unknown type %q", t)
		}
	}
}

func (p *schemaParser) properties(s *schema) {
	raw, ok := p.kw["properties"]
	if !ok {
		return
	}
	keys, vals, err := orderedObject(raw)
	if err != nil {
		p.fail("properties", "must be an object of schemas")
		return
	}
	s.props = make(map[string]*schema, len(keys))
	s.propOrder = keys
	for i, k := range keys {
		sub, err := keepFirst(p.err, vals[i], p.at+"/properties/"+escapePointer(k))
		if err != nil {
			p.err = err
			return
		}
		s.props[k] = sub
	}
}

func (p *schemaParser) stringList(key string, dst *[]string) {
	raw, ok := p.kw[key]
	if !ok {
		return
	}
	if json.Unmarshal(raw, dst) != nil {
		p.fail(key, "must be an array of strings")
	}
}

func (p *schemaParser) additional(s *schema) {
	raw, ok := p.kw["additionalProperties"]
	if !ok {
		return
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		s.noExtra = !b
		return
	}
	if !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		p.fail("additionalProperties", "must be a boolean or a schema")
		return
	}
	s.extra, p.err = keepFirst(p.err, raw, p.at+"/additionalProperties")
}

func (p *schemaParser) enum(s *schema) {
	raw, ok := p.kw["enum"]
	if !ok {
		return
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil || len(items) == 0 {
		p.fail("enum", "must be a non-empty array")
		return
	}
	for _, it := range items {
		v, err := jsonnum.Decode(it)
		if err != nil {
			p.fail("enum", "has an invalid value")
			return
		}
		var c bytes.Buffer
		_ = json.Compact(&c, it) // it was just decoded, so it is valid
		s.enum = append(s.enum, v)
		s.enumText = append(s.enumText, c.String())
	}
}

func (p *schemaParser) number(key string, dst **big.Rat) {
	numberKeyword(p, key, "a number", dst, func(n json.Number) (*big.Rat, bool) {
		return parseRat(n.String())
	})
}

func (p *schemaParser) count(key string, dst *int) {
	numberKeyword(p, key, "a non-negative integer", dst, func(n json.Number) (int, bool) {
		i, err := n.Int64()
		return int(i), err == nil && i >= 0
	})
}

// numberKeyword sets *dst from keyword key when it is a JSON number that
// conv accepts, else fails with "must be <want>". (A function, not a
// method: methods cannot have type parameters.)
func numberKeyword[T any](p *schemaParser, key, want string, dst *T, conv func(json.Number) (T, bool)) {
	raw, ok := p.kw[key]
	if !ok {
		return
	}
	var n json.Number
	if !isQuoted(raw) && json.Unmarshal(raw, &n) == nil {
		if v, ok := conv(n); ok {
			*dst = v
			return
		}
	}
	p.fail(key, "must be %s", want)
}

// isQuoted reports a JSON string, which json.Number would accept as a number.
func isQuoted(raw []byte) bool {
	return bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`))
}

// orderedObject decodes a JSON object keeping its key order, which a Go map
// would lose.
func orderedObject(raw []byte) ([]string, []json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, errors.New("not an object")
	}
	var keys []string
	var vals []json.RawMessage
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, _ := t.(string) // object keys are always strings
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		if i := slices.Index(keys, k); i >= 0 {
			vals[i] = v // duplicate key: the last one wins, as in encoding/json
			continue
		}
		keys = append(keys, k)
		vals = append(vals, v)
	}
	return keys, vals, nil
}

// escapePointer escapes a key for use in a JSON pointer (RFC 6901).
func escapePointer(k string) string {
	if !bytes.ContainsAny([]byte(k), "~/") {
		return k
	}
	var b []byte
	for i := 0; i < len(k); i++ {
		switch k[i] {
		case '~':
			b = append(b, '~', '0')
		case '/':
			b = append(b, '~', '1')
		default:
			b = append(b, k[i])
		}
	}
	return string(b)
}

func pathOrRoot(at string) string {
	if at == "" {
		return "schema root"
	}
	return "schema " + at
}
