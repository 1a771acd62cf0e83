package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// schemaOf derives the object schema of a struct type, written in field
// order so the bytes never vary.
func schemaOf(t reflect.Type) (json.RawMessage, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("arguments type %s is not a struct", t)
	}
	var b bytes.Buffer
	if err := writeSchema(&b, t, nil, map[reflect.Type]bool{}); err != nil {
		return nil, err
	}
	return json.RawMessage(b.Bytes()), nil
}

// keywords are the extra keywords of one property, from its tags.
type keywords struct {
	description string
	enum        []string
	minimum     string
	maximum     string
}

// writeSchema writes the schema of t; kw are the keywords of the property
// of that type. seen holds the structs being written, to refuse recursion.
func writeSchema(b *bytes.Buffer, t reflect.Type, kw *keywords, seen map[reflect.Type]bool) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	b.WriteByte('{')
	head := func(typ string) {
		b.WriteString(`"type":"` + typ + `"`)
		if kw != nil && kw.description != "" {
			b.WriteString(`,"description":`)
			writeString(b, kw.description)
		}
	}
	bounds := func(unsigned bool) error {
		minimum := ""
		if unsigned {
			minimum = "0"
		}
		if kw != nil && kw.minimum != "" {
			minimum = kw.minimum
		}
		for _, k := range []struct{ name, v string }{{"minimum", minimum}, {"maximum", kwMax(kw)}} {
			if k.v == "" {
				continue
			}
			if _, err := strconv.ParseFloat(k.v, 64); err != nil {
				return fmt.Errorf("%s=%q is not a number", k.name, k.v)
			}
			b.WriteString(`,"` + k.name + `":` + k.v)
		}
		return nil
	}
	switch {
	case t == timeType:
		head("string")
		b.WriteString(`,"format":"date-time"`)
	case t == rawType || t.Kind() == reflect.Interface:
		// Any JSON value: no type keyword.
		if kw != nil && kw.description != "" {
			b.WriteString(`"description":`)
			writeString(b, kw.description)
		}
	default:
		switch t.Kind() {
		case reflect.String:
			head("string")
			if kw != nil && len(kw.enum) > 0 {
				b.WriteString(`,"enum":[`)
				for i, v := range kw.enum {
					if i > 0 {
						b.WriteByte(',')
					}
					writeString(b, v)
				}
				b.WriteByte(']')
			}
		case reflect.Bool:
			head("boolean")
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			head("integer")
			if err := bounds(false); err != nil {
				return err
			}
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			head("integer")
			if err := bounds(true); err != nil {
				return err
			}
		case reflect.Float32, reflect.Float64:
			head("number")
			if err := bounds(false); err != nil {
				return err
			}
		case reflect.Slice, reflect.Array:
			if t.Elem().Kind() == reflect.Uint8 {
				head("string") // encoding/json sends bytes as base64 text
				break
			}
			head("array")
			b.WriteString(`,"items":`)
			if err := writeSchema(b, t.Elem(), nil, seen); err != nil {
				return err
			}
		case reflect.Map:
			if t.Key().Kind() != reflect.String {
				return fmt.Errorf("map key type %s is not a string", t.Key())
			}
			head("object")
			b.WriteString(`,"additionalProperties":`)
			if err := writeSchema(b, t.Elem(), nil, seen); err != nil {
				return err
			}
		case reflect.Struct:
			if seen[t] {
				return fmt.Errorf("recursive type %s", t)
			}
			seen[t] = true
			head("object")
			if err := writeObject(b, t, seen); err != nil {
				return err
			}
			delete(seen, t)
		default:
			return fmt.Errorf("unsupported type %s", t)
		}
	}
	b.WriteByte('}')
	return nil
}

func kwMax(kw *keywords) string {
	if kw == nil {
		return ""
	}
	return kw.maximum
}

// field is one property of a struct schema.
type field struct {
	name     string
	typ      reflect.Type
	required bool
	kw       keywords
}

// writeObject writes a struct's properties, required list and
// additionalProperties:false.
func writeObject(b *bytes.Buffer, t reflect.Type, seen map[reflect.Type]bool) error {
	fields, err := fieldsOf(t)
	if err != nil {
		return err
	}
	b.WriteString(`,"properties":{`)
	var required []string
	names := map[string]bool{}
	for i, f := range fields {
		if names[f.name] {
			return fmt.Errorf("%s: two fields are named %q", t, f.name)
		}
		names[f.name] = true
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(b, f.name)
		b.WriteByte(':')
		if err := writeSchema(b, f.typ, &f.kw, seen); err != nil {
			return fmt.Errorf("%s.%s: %w", t, f.name, err)
		}
		if f.required {
			required = append(required, f.name)
		}
	}
	b.WriteString(`},"required":[`)
	for i, r := range required {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(b, r)
	}
	b.WriteString(`],"additionalProperties":false`)
	return nil
}

// fieldsOf lists a struct's properties in field order, promoting the fields
// of embedded structs without a json name, as encoding/json does.
func fieldsOf(t reflect.Type) ([]field, error) {
	var out []field
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" {
			et := sf.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				inner, err := fieldsOf(et)
				if err != nil {
					return nil, err
				}
				out = append(out, inner...)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		f := field{name: name, typ: sf.Type, required: true}
		for _, o := range strings.Split(opts, ",") {
			if o == "omitempty" || o == "omitzero" {
				f.required = false
			}
		}
		f.kw.description = sf.Tag.Get("desc")
		if err := parseJSONSchemaTag(sf.Tag.Get("jsonschema"), &f); err != nil {
			return nil, fmt.Errorf("%s.%s: %w", t, sf.Name, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// parseJSONSchemaTag reads `jsonschema:"description=…,enum=a|b,minimum=1,
// maximum=9,required"`; a comma inside a value is written \,.
func parseJSONSchemaTag(tag string, f *field) error {
	if tag == "" {
		return nil
	}
	var parts []string
	var cur strings.Builder
	for i := 0; i < len(tag); i++ {
		switch {
		case tag[i] == '\\' && i+1 < len(tag) && tag[i+1] == ',':
			cur.WriteByte(',')
			i++
		case tag[i] == ',':
			parts = append(parts, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(tag[i])
		}
	}
	parts = append(parts, cur.String())
	for _, p := range parts {
		k, v, _ := strings.Cut(p, "=")
		switch strings.TrimSpace(k) {
		case "description":
			f.kw.description = v
		case "enum":
			f.kw.enum = strings.Split(v, "|")
		case "minimum":
			f.kw.minimum = v
		case "maximum":
			f.kw.maximum = v
		case "required":
			f.required = true
		case "":
		default:
			return errors.New("unknown jsonschema tag keyword " + strconv.Quote(k))
		}
	}
	return nil
}

// writeString writes s as a JSON string without HTML escaping.
func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // a string always encodes
	b.Truncate(b.Len() - 1) // Encode's newline
}
