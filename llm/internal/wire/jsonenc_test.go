package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestJSONEncoder(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"markup is not escaped", map[string]string{"code": "if a < b && c > d {}"}, `{"code":"if a < b && c > d {}"}`},
		{"no trailing newline", []int{1, 2}, `[1,2]`},
		{"raw JSON kept", struct {
			P any `json:"p"`
		}{P: map[string]any{}}, `{"p":{}}`},
	}
	var enc JSONEncoder
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := enc.Encode(tt.in)
			if err != nil || string(got) != tt.want {
				t.Fatalf("Encode = %s, %v; want %s", got, err, tt.want)
			}
			fresh, err := MarshalJSON(tt.in)
			if err != nil || string(fresh) != tt.want {
				t.Fatalf("MarshalJSON = %s, %v; want %s", fresh, err, tt.want)
			}
		})
	}
	if _, err := enc.Encode(make(chan int)); err == nil {
		t.Fatal("encoding a channel succeeded")
	}
}

// stdString is a string as encoding/json writes it without HTML escaping.
func stdString(t testing.TB, s string) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func TestAppendString(t *testing.T) {
	tests := map[string]string{
		"empty":                  "",
		"plain":                  "hello, world",
		"markup":                 "if a < b && c > d {}",
		"escapes":                "quote \" backslash \\ nl \n cr \r tab \t bs \b ff \f",
		"controls":               "\x00\x01\x1f\x7f end",
		"unicode":                "héllo wörld ✓ 🎉",
		"separators":             "line\u2028para\u2029end",
		"invalid utf8":           "a\xffb\xc3(c\xe2\x82d\xf0\x9f\x98",
		"lone surrogate encoded": "\xed\xa0\x80",
	}
	for b := range 256 {
		tests[fmt.Sprintf("byte %#x", b)] = string([]byte{'x', byte(b), 'y'})
	}
	for name, s := range tests {
		t.Run(name, func(t *testing.T) {
			got := string(AppendString([]byte("prefix"), s))
			if want := "prefix" + stdString(t, s); got != want {
				t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
			}
		})
	}
}

// TestAppendStringWordAtATime puts every byte value at every position of
// strings long enough for the 8-byte fast path, and runs of non-ASCII.
func TestAppendStringWordAtATime(t *testing.T) {
	for b := range 256 {
		for pos := range 19 {
			in := []byte("abcdefghijklmnopqrs")
			in[pos] = byte(b)
			s := string(in)
			if got, want := string(AppendString(nil, s)), stdString(t, s); got != want {
				t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
			}
		}
	}
	for _, s := range []string{"12345678 abcdefgh", "éééééééé12345678", strings.Repeat("x", 64) + `\`} {
		if got, want := string(AppendString(nil, s)), stdString(t, s); got != want {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func TestAppendValue(t *testing.T) {
	for _, v := range []any{nil, "a<b>\n", []string{"x"}, []int(nil), map[string]any{"k": 1}} {
		got, err := AppendValue(nil, v)
		want, werr := MarshalJSON(v)
		if err != nil || werr != nil || string(got) != string(want) {
			t.Fatalf("AppendValue(%#v) = %s, %v; want %s", v, got, err, want)
		}
	}
	if _, err := AppendValue(nil, make(chan int)); err == nil {
		t.Fatal("appending a channel succeeded")
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "<&>", "\"\\\n\r\t\b\f", "\x00\x1f\x7f", "\u2028\u2029", "\xff\xfe", "é✓🎉", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(AppendString(nil, s)), stdString(t, s); got != want {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
	})
}
