package mcp

import (
	"encoding/json"
	"strings"
	"testing"
)

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

func TestFixSchema(t *testing.T) {
	cases := []struct {
		name, in, want, err string
	}{
		{"plain object kept, keys sorted", `{"type":"object","required":["a"],"properties":{"b":{"type":"string"},"a":{"type":"integer"}}}`,
			`{"properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a"],"type":"object"}`, ""},
		{"missing root type", `{"properties":{"a":{"type":"string"}}}`, `{"properties":{"a":{"type":"string"}},"type":"object"}`, ""},
		{"no properties", `{"type":"object"}`, `{"properties":{},"type":"object"}`, ""},
		{"array without items, nested", `{"type":"object","properties":{"o":{"type":"object","properties":{"l":{"type":["array","null"]}}}}}`,
			`{"properties":{"o":{"properties":{"l":{"items":{},"type":["array","null"]}},"type":"object"}},"type":"object"}`, ""},
		{"$schema, $id and unknown required dropped", `{"$schema":"x","$id":"y","type":"object","properties":{"a":{}},"required":["a","b"]}`,
			`{"properties":{"a":{}},"required":["a"],"type":"object"}`, ""},
		{"anyOf branches fixed", `{"type":"object","properties":{"v":{"anyOf":[{"type":"array"},{"type":"string"}]}}}`,
			`{"properties":{"v":{"anyOf":[{"items":{},"type":"array"},{"type":"string"}]}},"type":"object"}`, ""},
		{"root string rejected", `{"type":"string"}`, "", `root has type "string"`},
		{"root array type rejected", `{"type":["object","null"]}`, "", "providers require"},
		{"not an object", `[1,2]`, "", "not a JSON object"},
		{"null schema", `null`, `{"properties":{},"type":"object"}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var in any
			if err := jsonUnmarshal(c.in, &in); err != nil {
				t.Fatal(err)
			}
			got, _, err := fixSchema(in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestModelNames(t *testing.T) {
	long := strings.Repeat("x", 80)
	cases := []struct{ server, tool, want string }{
		{"fs", "read_file", "fs__read_file"},
		{"my.server", "get issue/v2", "my_server__get_issue_v2"},
		{"a-b", "c-d", "a-b__c-d"},
		{"ü", "ñ", "__" + "__" + "__"}, // each UTF-8 byte becomes "_"
		{"s", long, ("s__" + long)[:64]},
		{"", "t", "___t"},
	}
	for _, c := range cases {
		if got := modelName(c.server, c.tool); got != c.want {
			t.Errorf("modelName(%q, %q) = %q, want %q", c.server, c.tool, got, c.want)
		}
	}
	taken := map[string]string{"a__b": "x", "a__b_2": "y"}
	if got := unique("a__b", taken); got != "a__b_3" {
		t.Errorf("unique: %s", got)
	}
	full := strings.Repeat("z", 64)
	if got := unique(full, map[string]string{full: "x"}); len(got) != 64 || !strings.HasSuffix(got, "_2") {
		t.Errorf("unique at 64: %s", got)
	}
}

func TestExpand(t *testing.T) {
	env := func(k string) string { return map[string]string{"TOKEN": "s3cret", "HOST": "h"}[k] }
	cases := []struct{ in, want, err string }{
		{"Bearer ${TOKEN}", "Bearer s3cret", ""},
		{"http://${HOST}:8080/${HOST}", "http://h:8080/h", ""},
		{"cost $5 and $$HOME", "cost $5 and $HOME", ""},
		{"${MISSING}", "", "environment variable MISSING is not set"},
		{"x${TOKEN", "", "unclosed"},
	}
	for _, c := range cases {
		got, err := expand(c.in, env)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("expand(%q): err %v, want %q without the secret", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("expand(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}
