package turn

import "testing"

// stitch joins the pieces of an answer continued after a length cut: a
// newline only where both sides would otherwise glue two words together.
func TestStitch(t *testing.T) {
	tests := []struct {
		name  string
		parts []string
		want  string
	}{
		{"nothing", nil, ""},
		{"one piece", []string{"Hello world"}, "Hello world"},
		{"words would glue", []string{"Hello", "world"}, "Hello\nworld"},
		{"space at the end of the first", []string{"Hello ", "world"}, "Hello world"},
		{"space at the start of the second", []string{"Hello", " world"}, "Hello world"},
		{"newline already there", []string{"line one\n", "line two"}, "line one\nline two"},
		{"tab counts as space", []string{"a\t", "b"}, "a\tb"},
		{"no-break space counts as space", []string{"a\u00a0", "b"}, "a\u00a0b"},
		{"empty piece in the middle", []string{"a", "", "b"}, "a\nb"},
		{"empty first piece", []string{"", "a"}, "a"},
		{"empty last piece", []string{"a", ""}, "a"},
		{"multi-byte runes on both sides", []string{"naïve", "über"}, "naïve\nüber"},
		{"three pieces", []string{"one", "two ", "three"}, "one\ntwo three"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stitch(tt.parts); got != tt.want {
				t.Errorf("stitch(%q) = %q, want %q", tt.parts, got, tt.want)
			}
		})
	}
}
