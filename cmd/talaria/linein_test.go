package main

import (
	"reflect"
	"testing"
)

func TestJoinPastes(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{"plain lines", []string{"a", "b"}, []string{"a", "b"}},
		{"one paste", []string{"\x1b[200~func f() {", "    return 1", "}\x1b[201~"}, []string{"func f() {\n    return 1\n}"}},
		{"paste then typed", []string{"look: \x1b[200~x", "y\x1b[201~ please"}, []string{"look: x\ny please"}},
		{"arrow keys removed", []string{"abc\x1b[D\x1b[DX", "\x1b[A"}, []string{"abcX", ""}},
		{"backslash continues", []string{`one \`, "two"}, []string{"one \ntwo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := make(chan string)
			go func() {
				for _, l := range tc.in {
					in <- l
				}
				close(in)
			}()
			var got []string
			for m := range joinPastes(in) {
				got = append(got, m)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
