package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/tool"
)

type Page struct {
	Offset uint `json:"offset,omitempty" desc:"first line, from 0"`
}

type searchArgs struct {
	Page
	Query   string             `json:"query" desc:"what to look for"`
	Mode    string             `json:"mode,omitempty" jsonschema:"description=match mode\\, default exact,enum=exact|fuzzy"`
	Limit   int                `json:"limit,omitempty" jsonschema:"minimum=1,maximum=50"`
	Score   float64            `json:"score,omitzero"`
	Tags    []string           `json:"tags,omitempty"`
	Labels  map[string]int     `json:"labels,omitempty"`
	Since   *time.Time         `json:"since,omitempty"`
	Extra   json.RawMessage    `json:"extra,omitempty"`
	Filter  *struct{ On bool } `json:"filter,omitempty"`
	Blob    []byte             `json:"blob,omitempty"`
	Skipped string             `json:"-"`
	hidden  string
	Exact   bool `json:"exact" jsonschema:"required"`
}

func TestFuncOfSchema(t *testing.T) {
	f, err := tool.FuncOf(tool.Info{Name: "search"}, func(ctx context.Context, a searchArgs) (string, error) { return a.hidden, nil })
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{` +
		`"offset":{"type":"integer","description":"first line, from 0","minimum":0},` +
		`"query":{"type":"string","description":"what to look for"},` +
		`"mode":{"type":"string","description":"match mode, default exact","enum":["exact","fuzzy"]},` +
		`"limit":{"type":"integer","minimum":1,"maximum":50},` +
		`"score":{"type":"number"},` +
		`"tags":{"type":"array","items":{"type":"string"}},` +
		`"labels":{"type":"object","additionalProperties":{"type":"integer"}},` +
		`"since":{"type":"string","format":"date-time"},` +
		`"extra":{},` +
		`"filter":{"type":"object","properties":{"On":{"type":"boolean"}},"required":["On"],"additionalProperties":false},` +
		`"blob":{"type":"string"},` +
		`"exact":{"type":"boolean"}},` +
		`"required":["query","exact"],"additionalProperties":false}`
	if got := string(f.Info().Parameters); got != want {
		t.Errorf("schema:\n got %s\nwant %s", got, want)
	}
	// The derived schema is one the registry accepts.
	if _, err := tool.NewRegistry(f); err != nil {
		t.Fatal(err)
	}
}

func TestFuncOfRejects(t *testing.T) {
	noop := func(context.Context, struct{}) (string, error) { return "", nil }
	for _, tc := range []struct {
		name string
		make func() error
		want error
	}{
		{"bad name", func() error { _, err := tool.FuncOf(tool.Info{Name: "a b"}, noop); return err }, tool.ErrInvalidName},
		{"not a struct", func() error {
			_, err := tool.FuncOf(tool.Info{Name: "x"}, func(context.Context, string) (string, error) { return "", nil })
			return err
		}, tool.ErrInvalidSchema},
		{"channel", func() error {
			_, err := tool.FuncOf(tool.Info{Name: "x"}, func(context.Context, struct{ C chan int }) (string, error) { return "", nil })
			return err
		}, tool.ErrInvalidSchema},
		{"recursive", func() error {
			type node struct{ Next []node }
			_, err := tool.FuncOf(tool.Info{Name: "x"}, func(context.Context, node) (string, error) { return "", nil })
			return err
		}, tool.ErrInvalidSchema},
		{"bad tag", func() error {
			_, err := tool.FuncOf(tool.Info{Name: "x"}, func(context.Context, struct {
				N int `jsonschema:"minimum=low"`
			}) (string, error) {
				return "", nil
			})
			return err
		}, tool.ErrInvalidSchema},
		{"given schema not an object", func() error {
			_, err := tool.FuncOf(tool.Info{Name: "x", Parameters: json.RawMessage(`{"type":"string"}`)}, noop)
			return err
		}, tool.ErrInvalidSchema},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.make(); !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

func TestFuncRun(t *testing.T) {
	add, err := tool.FuncOf(tool.Info{Name: "add"}, func(ctx context.Context, in addArgs) (map[string]int, error) {
		if in.A < 0 {
			return nil, errors.New("negative")
		}
		if in.A == 13 {
			panic("unlucky")
		}
		return map[string]int{"sum": in.A + in.B}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, args string
		content    string // want this content (IsError from isError)
		isError    bool
		argErr     string // want an *ArgError containing this
		err        string // want this Go error
	}{
		{name: "ok", args: `{"a":2,"b":3}`, content: `{"sum":5}`},
		{name: "normalised number", args: `{"a":2.0,"b":3}`, content: `{"sum":5}`},
		{name: "double encoded", args: `"{\"a\":1,\"b\":1}"`, content: `{"sum":2}`},
		{name: "missing", args: `{"a":2}`, argErr: `missing required property "b"`},
		{name: "wrong type", args: `{"a":"2","b":3}`, argErr: "/a: expected integer"},
		{name: "unknown property", args: `{"a":1,"b":2,"c":3}`, argErr: `"c"`},
		{name: "not json", args: `{"a":`, argErr: "not valid JSON"},
		{name: "too big for int", args: `{"a":1e400,"b":1}`, argErr: "invalid arguments"},
		{name: "function error", args: `{"a":-1,"b":0}`, err: "negative"},
		{name: "panic", args: `{"a":13,"b":0}`, content: "internal error in add: unlucky", isError: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := add.Run(context.Background(), json.RawMessage(tc.args))
			var ae *tool.ArgError
			switch {
			case tc.argErr != "":
				if !errors.As(err, &ae) || ae.Tool != "add" || !strings.Contains(err.Error(), tc.argErr) {
					t.Fatalf("got %+v, %v; want an ArgError with %q", res, err, tc.argErr)
				}
				if !strings.Contains(ae.Expected, `"a": integer`) {
					t.Errorf("Expected = %q", ae.Expected)
				}
			case tc.err != "":
				if err == nil || err.Error() != tc.err || errors.As(err, &ae) {
					t.Fatalf("got %+v, %v; want error %q", res, err, tc.err)
				}
			default:
				if err != nil || res.Content != tc.content || res.IsError != tc.isError {
					t.Fatalf("got %+v, %v; want %q", res, err, tc.content)
				}
			}
		})
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res, err := add.Run(ctx, json.RawMessage(`{"a":1,"b":1}`)); err != nil || !res.IsError || !strings.Contains(res.Content, "interrupted") {
		t.Errorf("cancelled: %+v, %v", res, err)
	}
}

func TestFuncOutputs(t *testing.T) {
	type none struct{}
	run := func(t *testing.T, tl tool.Tool) tool.Result {
		t.Helper()
		res, err := tl.Run(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	s, _ := tool.FuncOf(tool.Info{Name: "s"}, func(context.Context, none) (string, error) { return "a<b>\xff", nil })
	r, _ := tool.FuncOf(tool.Info{Name: "r"}, func(context.Context, none) (tool.Result, error) {
		return tool.Result{Content: "bad", IsError: true}, nil
	})
	j, _ := tool.FuncOf(tool.Info{Name: "j"}, func(context.Context, *none) ([]string, error) { return []string{"<&>"}, nil })
	if got := run(t, s); got.Content != "a<b>\uFFFD" {
		t.Errorf("string: %q", got.Content)
	}
	if got := run(t, r); got.Content != "bad" || !got.IsError {
		t.Errorf("result: %+v", got)
	}
	if got := run(t, j); got.Content != `["<&>"]` {
		t.Errorf("json: %q", got.Content)
	}
	if p := string(j.Info().Parameters); p != `{"type":"object","properties":{},"required":[],"additionalProperties":false}` {
		t.Errorf("empty schema: %s", p)
	}
}
