package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
)

// fakeTool is a Tool with a fixed Info.
type fakeTool struct{ info Info }

func (f fakeTool) Info() Info { return f.info }
func (f fakeTool) Run(context.Context, json.RawMessage) (Result, error) {
	return Result{Content: "ok"}, nil
}

func newFake(name, params string) fakeTool {
	return fakeTool{Info{Name: name, Description: "does " + name, Parameters: json.RawMessage(params)}}
}

func TestNewRegistryRejects(t *testing.T) {
	good := newFake("good", `{"type":"object"}`)
	tests := []struct {
		name  string
		tools []Tool
		want  error
	}{
		{"duplicate", []Tool{good, newFake("good", `{"type":"object"}`)}, ErrDuplicateName},
		{"empty name", []Tool{newFake("", `{"type":"object"}`)}, ErrInvalidName},
		{"space in name", []Tool{newFake("read file", `{"type":"object"}`)}, ErrInvalidName},
		{"dot in name", []Tool{newFake("fs.read", `{"type":"object"}`)}, ErrInvalidName},
		{"65 chars", []Tool{newFake(strings.Repeat("a", 65), `{"type":"object"}`)}, ErrInvalidName},
		{"non-ascii name", []Tool{newFake("lire_é", `{"type":"object"}`)}, ErrInvalidName},
		{"schema not JSON", []Tool{newFake("t", `{"type":`)}, ErrInvalidSchema},
		{"schema is array", []Tool{newFake("t", `[]`)}, ErrInvalidSchema},
		{"root not object type", []Tool{newFake("t", `{"type":"string"}`)}, ErrInvalidSchema},
		{"root without type", []Tool{newFake("t", `{"properties":{}}`)}, ErrInvalidSchema},
		{"unknown type", []Tool{newFake("t", `{"type":"object","properties":{"a":{"type":"text"}}}`)}, ErrInvalidSchema},
		{"required not list", []Tool{newFake("t", `{"type":"object","required":"a"}`)}, ErrInvalidSchema},
		{"bad minLength", []Tool{newFake("t", `{"type":"object","properties":{"a":{"type":"string","minLength":-1}}}`)}, ErrInvalidSchema},
		{"bad maximum", []Tool{newFake("t", `{"type":"object","properties":{"a":{"type":"number","maximum":"9"}}}`)}, ErrInvalidSchema},
		{"empty enum", []Tool{newFake("t", `{"type":"object","properties":{"a":{"enum":[]}}}`)}, ErrInvalidSchema},
		{"bad additionalProperties", []Tool{newFake("t", `{"type":"object","additionalProperties":"no"}`)}, ErrInvalidSchema},
		{"bad nested items", []Tool{newFake("t", `{"type":"object","properties":{"a":{"type":"array","items":{"type":7}}}}`)}, ErrInvalidSchema},
		{"nil tool", []Tool{nil}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRegistry(tt.tools...)
			if err == nil {
				t.Fatalf("NewRegistry succeeded, want an error")
			}
			if r != nil {
				t.Errorf("NewRegistry returned a registry along with error %v", err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("error %v, want errors.Is %v", err, tt.want)
			}
		})
	}
}

func TestNewRegistryAccepts(t *testing.T) {
	tests := []struct {
		name, params string
	}{
		{"no parameters", ``},
		{"boolean sub-schema", `{"type":"object","properties":{"a":true}}`},
		{"unknown keywords ignored", `{"type":"object","title":"x","$schema":"y","properties":{"a":{"type":"string","format":"uri","default":"z"}}}`},
		{"type array at root", `{"type":["object"]}`},
		{"additionalProperties schema", `{"type":"object","additionalProperties":{"type":"integer"}}`},
		{"64-char name", `{"type":"object"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "tool_" + strings.ReplaceAll(tt.name, " ", "-")
			if tt.name == "64-char name" {
				name = strings.Repeat("A-_9", 16)
			}
			r, err := NewRegistry(newFake(name, tt.params))
			if err != nil {
				t.Fatalf("NewRegistry: %v", err)
			}
			if _, ok := r.Get(name); !ok {
				t.Errorf("Get(%q) not found", name)
			}
		})
	}
}

func TestRegistryOrderAndLookup(t *testing.T) {
	r, err := NewRegistry(newFake("zeta", ""), newFake("alpha", ""), newFake("mid", ""))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Register(newFake("last", "")); err != nil {
		t.Fatal(err)
	}
	want := []string{"zeta", "alpha", "mid", "last"}
	if got := r.Names(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	specs := r.Specs()
	for i, s := range specs {
		if s.Name != want[i] {
			t.Errorf("Specs()[%d].Name = %q, want %q", i, s.Name, want[i])
		}
		if s.Description != "does "+want[i] {
			t.Errorf("Specs()[%d].Description = %q", i, s.Description)
		}
	}
	if string(specs[0].Parameters) != emptyObjectSchema {
		t.Errorf("missing parameters became %s, want %s", specs[0].Parameters, emptyObjectSchema)
	}
	if _, ok := r.Get("nope"); ok {
		t.Error("Get(nope) found a tool")
	}
	if _, ok := r.Info("nope"); ok {
		t.Error("Info(nope) found a tool")
	}
	if info, ok := r.Info("mid"); !ok || info.Name != "mid" {
		t.Errorf("Info(mid) = %+v, %v", info, ok)
	}
}

func TestSpecsByteStable(t *testing.T) {
	params := `{
		"type": "object",
		"properties": {
			"path":  {"type": "string", "description": "file"},
			"lines": {"type": "integer"}
		},
		"required": ["path"]
	}`
	r, err := NewRegistry(newFake("read", params), newFake("other", `{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	first, err := json.Marshal(r.Specs())
	if err != nil {
		t.Fatal(err)
	}
	// Callers mutating what they got must not change the next call's bytes.
	got := r.Specs()
	got[0].Parameters[0] = 'X'
	got[0].Name = "changed"
	info, _ := r.Info("read")
	info.Parameters[0] = 'Y'

	for i := range 5 {
		again, err := json.Marshal(r.Specs())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, again) {
			t.Fatalf("call %d: Specs bytes changed:\n%s\n%s", i, first, again)
		}
	}
	wantParams := `{"type":"object","properties":{"path":{"type":"string","description":"file"},"lines":{"type":"integer"}},"required":["path"]}`
	if p := string(r.Specs()[0].Parameters); p != wantParams {
		t.Errorf("parameters not compacted in author order:\n got %s\nwant %s", p, wantParams)
	}
}

// TestRegistryConcurrent lets -race check that registering while reading is safe.
func TestRegistryConcurrent(t *testing.T) {
	var r Registry // the zero value must work
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := r.Register(newFake("t"+string(rune('a'+i)), "")); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			_ = r.Specs()
			_, _ = r.Validate("ta", "{}")
		}()
	}
	wg.Wait()
	if n := len(r.Names()); n != 8 {
		t.Errorf("%d tools registered, want 8", n)
	}
}

func TestUnknownTool(t *testing.T) {
	r, err := NewRegistry(newFake("read_file", ""), newFake("write_file", ""))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, call, wantHint string
	}{
		{"unrelated", "launch_rockets", ""},
		{"case and separator", "ReadFile", `did you mean "read_file"?`},
		{"typo", "writ_file", `did you mean "write_file"?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.Validate(tt.call, "{}")
			var ue *UnknownToolError
			if !errors.As(err, &ue) {
				t.Fatalf("err = %v, want *UnknownToolError", err)
			}
			if ue.Name != tt.call || strings.Join(ue.Available, ",") != "read_file,write_file" {
				t.Errorf("got %+v", ue)
			}
			msg := err.Error()
			if !strings.Contains(msg, "available tools: read_file, write_file") {
				t.Errorf("message %q does not list the tools", msg)
			}
			if tt.wantHint != "" && !strings.Contains(msg, tt.wantHint) {
				t.Errorf("message %q lacks %q", msg, tt.wantHint)
			}
			if tt.wantHint == "" && strings.Contains(msg, "did you mean") {
				t.Errorf("message %q suggests a tool for an unrelated name", msg)
			}
		})
	}
}
