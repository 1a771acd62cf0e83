package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// Func is a tool made from a Go function: the model's arguments arrive as a
// typed value In, the function's Out becomes the result. Build one with
// [FuncOf].
//
// Run validates the arguments against the schema before decoding them, so a
// Func called directly (without a [Registry]) rejects wrong arguments too,
// with an [*ArgError]. A panic in the function becomes an error result; it
// does not start once ctx has ended. Out is turned into the result's
// content: a string as is, a [Result] as the whole result, anything else as
// JSON. An error from the function becomes an error result (see [Tool]).
type Func[In, Out any] struct {
	info     Info
	schema   *schema
	expected string
	fn       func(context.Context, In) (Out, error)
}

// FuncOf makes a tool of fn. info names and describes it; when
// info.Parameters is empty the schema is derived from In, which must be a
// struct (or a pointer to one):
//
//   - a field's property name is its json tag's name (a "-" field is left
//     out), else the field name; unexported fields are left out, and the
//     fields of embedded structs are promoted, as encoding/json does;
//   - a field is required unless its json tag says omitempty (or omitzero);
//   - the desc tag describes the property to the model; a jsonschema tag
//     adds keywords: `jsonschema:"description=…,enum=a|b,minimum=1,maximum=9"`
//     (commas inside a description are written \,);
//   - strings, booleans, integers (unsigned ones get minimum 0), floats,
//     slices and arrays, maps with string keys, nested structs, pointers
//     (to their element), time.Time (a string), json.RawMessage and
//     interfaces (any value) are supported; other kinds (channels,
//     functions, complex numbers) and recursive types are an error.
//
// Nested structs refuse unknown properties (additionalProperties: false),
// so a misspelt argument is reported instead of silently dropped. The
// schema's bytes depend only on In, so the request prefix stays
// byte-identical from call to call.
func FuncOf[In, Out any](info Info, fn func(ctx context.Context, in In) (Out, error)) (*Func[In, Out], error) {
	if fn == nil {
		return nil, fmt.Errorf("tool %q: nil function", info.Name)
	}
	if !validName(info.Name) {
		return nil, fmt.Errorf("tool %q: %w: must match ^[a-zA-Z0-9_-]{1,64}$", info.Name, ErrInvalidName)
	}
	params := bytes.TrimSpace(info.Parameters)
	if len(params) == 0 {
		derived, err := schemaOf(reflect.TypeFor[In]())
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w: %w", info.Name, ErrInvalidSchema, err)
		}
		params = derived
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, params); err != nil {
		return nil, fmt.Errorf("tool %q: %w: not valid JSON: %w", info.Name, ErrInvalidSchema, err)
	}
	s, err := parseRootSchema(compact.Bytes())
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w: %w", info.Name, ErrInvalidSchema, err)
	}
	info.Parameters = json.RawMessage(compact.Bytes())
	return &Func[In, Out]{info: info, schema: s, expected: s.expected(), fn: fn}, nil
}

// Info implements Tool; Parameters is the (derived) schema.
func (f *Func[In, Out]) Info() Info {
	info := f.info
	info.Parameters = bytes.Clone(f.info.Parameters)
	return info
}

// Run implements Tool.
func (f *Func[In, Out]) Run(ctx context.Context, args json.RawMessage) (res Result, err error) {
	if ctx.Err() != nil {
		return Errorf("interrupted before %s started", f.info.Name), nil
	}
	norm, err := validateArgs(f.info.Name, f.schema, f.expected, string(args))
	if err != nil {
		return Result{}, err
	}
	var in In
	if err := json.Unmarshal(norm, &in); err != nil {
		// The schema was given, not derived, and does not fit In; or a
		// number does not fit its Go type.
		return Result{}, &ArgError{Tool: f.info.Name, Problems: []string{decodeProblem(err)}, Expected: f.expected}
	}
	defer func() {
		if p := recover(); p != nil {
			res, err = Errorf("internal error in %s: %v", f.info.Name, p), nil
		}
		res.Content = strings.ToValidUTF8(res.Content, "\uFFFD")
	}()
	out, err := f.fn(ctx, in)
	if err != nil {
		return Result{}, err
	}
	return resultOf(out)
}

// decodeProblem words a decoding failure for the model.
func decodeProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("/%s: cannot be used as %s (value %s)", strings.ReplaceAll(te.Field, ".", "/"), te.Type, te.Value)
	}
	return "arguments do not fit: " + err.Error()
}

// resultOf turns a function's output into a result.
func resultOf(out any) (Result, error) {
	switch v := out.(type) {
	case Result:
		return v, nil
	case *Result:
		if v == nil {
			return Result{}, nil
		}
		return *v, nil
	case string:
		return Result{Content: v}, nil
	case []byte:
		return Result{Content: string(v)}, nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // results may hold code; keep <, > and & readable
	if err := enc.Encode(out); err != nil {
		return Result{}, fmt.Errorf("encode result: %w", err)
	}
	return Result{Content: strings.TrimSuffix(b.String(), "\n")}, nil
}
