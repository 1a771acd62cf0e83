package builtin

import "testing"

func TestGlob(t *testing.T) {
	tests := []struct {
		glob, path string
		want       bool
	}{
		{"*.go", "main.go", true},
		{"*.go", "a/b/main.go", true},
		{"*.go", "main.goo", false},
		{"src/*.ts", "src/a.ts", true},
		{"src/*.ts", "src/x/a.ts", false},
		{"src/**/*.ts", "src/a.ts", true},
		{"src/**/*.ts", "src/x/y/a.ts", true},
		{"src/**/*.ts", "lib/a.ts", false},
		{"**/test_*.py", "a/test_x.py", true},
		{"./cmd/*.go", "cmd/x.go", true},
		{"*.{ts,tsx}", "a/b.tsx", true},
		{"*.{ts,tsx}", "a/b.js", false},
		{"{cmd,internal}/**", "internal/x/y.go", true},
		{"[ab].txt", "b.txt", true},
	}
	for _, tt := range tests {
		t.Run(tt.glob+"~"+tt.path, func(t *testing.T) {
			g, err := newGlob(tt.glob)
			if err != nil {
				t.Fatal(err)
			}
			if got := g.match(tt.path); got != tt.want {
				t.Errorf("match = %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := newGlob("[a"); err == nil {
		t.Error("newGlob accepted a malformed pattern")
	}
}
