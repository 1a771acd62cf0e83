package tool

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

const readSchema = `{"type":"object","properties":{
	"path":{"type":"string","description":"file to read"},
	"start_line":{"type":"integer","minimum":1}
},"required":["path"],"additionalProperties":false}`

// kitchenSchema exercises every supported keyword.
const kitchenSchema = `{"type":"object","properties":{
	"s":{"type":"string","minLength":2,"maxLength":4},
	"i":{"type":"integer","minimum":1,"maximum":10},
	"n":{"type":"number","minimum":-1.5,"maximum":2.5},
	"b":{"type":"boolean"},
	"z":{"type":"null"},
	"sn":{"type":["string","null"]},
	"mode":{"enum":["fast","slow",3]},
	"tags":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":2},
	"nested":{"type":"object","properties":{
		"deep":{"type":"object","properties":{"k":{"type":"integer"}},"required":["k"]},
		"list":{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"],"additionalProperties":false}}
	}},
	"anything":{},
	"nope":false,
	"ints":{"type":"object","additionalProperties":{"type":"integer"}}
}}`

func TestValidateAccepts(t *testing.T) {
	tests := []struct {
		name, schema, args, want string
	}{
		{"empty becomes {}", kitchenSchema, "", "{}"},
		{"whitespace becomes {}", kitchenSchema, " \n\t ", "{}"},
		{"null becomes {}", kitchenSchema, "null", "{}"},
		{"passes through", readSchema, ` {"path":"a.go","start_line":3} `, `{"path":"a.go","start_line":3}`},
		{"double-encoded object", readSchema, `"{\"path\": \"a.go\"}"`, `{"path": "a.go"}`},
		{"double-encoded empty", kitchenSchema, `""`, `{}`},
		{"integral float becomes integer", readSchema, `{"path":"a","start_line":3.0}`, `{"path":"a","start_line":3}`},
		{"exponent integer", kitchenSchema, `{"i":1e1}`, `{"i":10}`},
		{"nested integer rewritten", kitchenSchema, `{"nested":{"list":[{"id":2.00}]}}`, `{"nested":{"list":[{"id":2}]}}`},
		{"additional schema integer rewritten", kitchenSchema, `{"ints":{"x":5.0}}`, `{"ints":{"x":5}}`},
		{"no HTML escaping on rewrite", readSchema, `{"path":"a<b>&c","start_line":1.0}`, `{"path":"a<b>&c","start_line":1}`},
		{"string bounds by runes", kitchenSchema, `{"s":"éèàü"}`, `{"s":"éèàü"}`},
		{"number bounds inclusive", kitchenSchema, `{"n":-1.5,"i":10}`, `{"n":-1.5,"i":10}`},
		{"type array null", kitchenSchema, `{"sn":null,"z":null}`, `{"sn":null,"z":null}`},
		{"enum number by value", kitchenSchema, `{"mode":3.0}`, `{"mode":3.0}`},
		{"anything goes", kitchenSchema, `{"anything":[1,{"a":null}]}`, `{"anything":[1,{"a":null}]}`},
		{"extra allowed by default", kitchenSchema, `{"other":1}`, `{"other":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRegistry(newFake("t", tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.Validate("t", tt.args)
			if err != nil {
				t.Fatalf("Validate(%s): %v", tt.args, err)
			}
			if string(got) != tt.want {
				t.Errorf("Validate(%s) = %s, want %s", tt.args, got, tt.want)
			}
		})
	}
}

func TestValidateRejects(t *testing.T) {
	tests := []struct {
		name, schema, args string
		want               []string // each must appear among the problems, in order
	}{
		{"missing required", readSchema, `{}`, []string{`missing required property "path"`}},
		{"wrong type", readSchema, `{"path":7}`, []string{`/path: expected string, got number 7`}},
		{"quoted integer hint", readSchema, `{"path":"a","start_line":"5"}`,
			[]string{`/start_line: expected integer, got string "5" (send the integer without quotes)`}},
		{"fraction not integer", readSchema, `{"path":"a","start_line":1.5}`, []string{`/start_line: expected integer, got number 1.5`}},
		{"below minimum", readSchema, `{"path":"a","start_line":0}`, []string{`/start_line: must be >= 1, got 0`}},
		{"above maximum", kitchenSchema, `{"i":11}`, []string{`/i: must be <= 10, got 11`}},
		{"fractional bound", kitchenSchema, `{"n":2.6}`, []string{`/n: must be <= 2.5, got 2.6`}},
		{"additional false", readSchema, `{"path":"a","file":"b"}`, []string{`unexpected property "file" (allowed: path, start_line)`}},
		{"minLength", kitchenSchema, `{"s":"a"}`, []string{`/s: must be at least 2 characters long, got 1`}},
		{"maxLength", kitchenSchema, `{"s":"abcde"}`, []string{`/s: must be at most 4 characters long, got 5`}},
		{"minItems", kitchenSchema, `{"tags":[]}`, []string{`/tags: must have at least 1 item, got 0`}},
		{"maxItems", kitchenSchema, `{"tags":["a","b","c"]}`, []string{`/tags: must have at most 2 items, got 3`}},
		{"items type", kitchenSchema, `{"tags":["a",2]}`, []string{`/tags/1: expected string, got number 2`}},
		{"enum", kitchenSchema, `{"mode":"medium"}`, []string{`/mode: must be one of "fast", "slow", 3, got string "medium"`}},
		{"boolean", kitchenSchema, `{"b":"true"}`, []string{`/b: expected boolean, got string "true" (send the boolean without quotes)`}},
		{"null type", kitchenSchema, `{"z":0}`, []string{`/z: expected null, got number 0`}},
		{"type array", kitchenSchema, `{"sn":1}`, []string{`/sn: expected string or null, got number 1`}},
		{"false schema", kitchenSchema, `{"nope":1}`, []string{`/nope: no value is allowed here`}},
		{"nested required", kitchenSchema, `{"nested":{"deep":{}}}`, []string{`/nested/deep: missing required property "k"`}},
		{"nested array object", kitchenSchema, `{"nested":{"list":[{"id":1},{"id":"x","extra":true}]}}`,
			[]string{`/nested/list/1/id: expected integer, got string "x"`, `/nested/list/1: unexpected property "extra" (allowed: id)`}},
		{"object sent as string", kitchenSchema, `{"nested":"{\"deep\":{\"k\":1}}"}`,
			[]string{`/nested: expected object, got string "{\"deep\":{\"k\":1}}" (send the object itself, not a string containing JSON)`}},
		{"additional schema", kitchenSchema, `{"ints":{"a":1,"b":"2"}}`, []string{`/ints/b: expected integer`}},
		{"several problems", readSchema, `{"start_line":-1,"x":1}`,
			[]string{`missing required property "path"`, `/start_line: must be >= 1, got -1`, `unexpected property "x"`}},
		{"array instead of object", readSchema, `["a.go"]`, []string{`arguments must be a JSON object, got array`}},
		{"number instead of object", readSchema, `42`, []string{`arguments must be a JSON object, got number 42`}},
		{"invalid JSON", readSchema, `{"path": }`, []string{`arguments are not valid JSON: invalid character '}' looking for beginning of value at offset 10, near "{\"path\": ⟨here⟩}"`}},
		{"truncated JSON", readSchema, `{"path": "a.go"`, []string{`arguments are not valid JSON: the text ends early at offset 15`}},
		{"single quotes", readSchema, `{'path': 'a'}`, []string{`arguments are not valid JSON: invalid character '\'' looking for beginning of object key string at offset 2`}},
		{"trailing garbage", readSchema, `{"path":"a"} {}`, []string{`arguments are not valid JSON: invalid character '{' after top-level value at offset 14`}},
		{"double-encoded invalid", readSchema, `"{\"path\": "`, []string{`arguments are a JSON string whose content is not a valid JSON object: the text ends early`}},
		{"double-encoded non-object", readSchema, `"a.go"`, []string{`arguments must be a JSON object, got string "a.go"`}},
		{"double-encoded then invalid", readSchema, `"{\"path\": 1}"`, []string{`/path: expected string, got number 1`}},
		{"unterminated string", readSchema, `"{\"path`, []string{`arguments are not valid JSON: the text ends early`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRegistry(newFake("t", tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.Validate("t", tt.args)
			var ae *ArgError
			if !errors.As(err, &ae) {
				t.Fatalf("Validate(%s) = %s, %v; want *ArgError", tt.args, got, err)
			}
			if got != nil {
				t.Errorf("arguments %s returned along with an error", got)
			}
			if ae.Tool != "t" || ae.Expected == "" {
				t.Errorf("ArgError %+v lacks tool or expected", ae)
			}
			joined := strings.Join(ae.Problems, "\n")
			rest := joined
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("problems\n%s\ndo not contain (in order)\n%s", joined, w)
				}
				rest = rest[i+len(w):]
			}
			if !strings.Contains(err.Error(), ae.Expected) || !strings.Contains(err.Error(), tt.want[0]) {
				t.Errorf("Error() %q omits the problem or the expected arguments", err.Error())
			}
		})
	}
}

func TestValidateBoundsProblems(t *testing.T) {
	var props, args []string
	for i := range 30 {
		props = append(props, fmt.Sprintf(`"p%02d":{"type":"integer"}`, i))
		args = append(args, fmt.Sprintf(`"p%02d":"x"`, i))
	}
	r, err := NewRegistry(newFake("t", `{"type":"object","properties":{`+strings.Join(props, ",")+`}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Validate("t", "{"+strings.Join(args, ",")+"}")
	var ae *ArgError
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v, want *ArgError", err)
	}
	if len(ae.Problems) != maxProblems+1 {
		t.Errorf("%d problems, want %d plus a summary", len(ae.Problems), maxProblems)
	}
	if last := ae.Problems[len(ae.Problems)-1]; last != "and 18 more problem(s)" {
		t.Errorf("last problem = %q", last)
	}
	if !strings.HasPrefix(ae.Problems[0], "/p00:") {
		t.Errorf("problems not in schema order: %q", ae.Problems[0])
	}
}

func TestExpected(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		{"read", readSchema, `{"path": string, "start_line"?: integer >=1}`},
		{"no properties", `{"type":"object"}`, `object`},
		{"kitchen", kitchenSchema, `{"s"?: string, "i"?: integer 1..10, "n"?: number -1.5..2.5, "b"?: boolean, "z"?: null, ` +
			`"sn"?: string|null, "mode"?: "fast"|"slow"|3, "tags"?: [string], ` +
			`"nested"?: {"deep"?: {"k": integer}, "list"?: [{"id": integer}]}, "anything"?: any, "nope"?: nothing, "ints"?: object}`},
		{"pointer escapes in keys", `{"type":"object","properties":{"a/b":{"type":"integer","maximum":3}}}`, `{"a/b"?: integer <=3}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := parseRootSchema([]byte(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			if got := s.expected(); got != tt.want {
				t.Errorf("expected()\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestExpectedIsBounded(t *testing.T) {
	var props []string
	for i := range 200 {
		props = append(props, fmt.Sprintf(`"property_number_%d":{"type":"string"}`, i))
	}
	s, err := parseRootSchema([]byte(`{"type":"object","properties":{` + strings.Join(props, ",") + `}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := s.expected()
	if len(got) > maxExpected+len("…") || !strings.HasSuffix(got, "…") {
		t.Errorf("expected() is %d bytes, suffix %q", len(got), got[len(got)-10:])
	}
}

func TestPointerPathEscaping(t *testing.T) {
	r, err := NewRegistry(newFake("t", `{"type":"object","properties":{"a/b~c":{"type":"integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Validate("t", `{"a/b~c":"x"}`)
	if err == nil || !strings.Contains(err.Error(), `/a~1b~0c: expected integer`) {
		t.Errorf("err = %v, want an escaped JSON pointer", err)
	}
}

func TestValidateHugeExponent(t *testing.T) {
	r, err := NewRegistry(newFake("t", readSchema))
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Validate("t", `{"path":"a","start_line":1e999999999}`)
	if err == nil || !strings.Contains(err.Error(), "/start_line: expected integer, got number 1e999999999") {
		t.Errorf("err = %v", err)
	}
}
