package storeopen_test

import (
	"path/filepath"
	"testing"

	"github.com/talaria-agent/talaria/store/sqlite"
	"github.com/talaria-agent/talaria/store/storeopen"
)

func TestTarget(t *testing.T) {
	tests := []struct {
		o             storeopen.Options
		backend, wher string
		bad           bool
	}{
		{o: storeopen.Options{Path: "/h/state.db"}, backend: storeopen.SQLite, wher: "/h/state.db"},
		{o: storeopen.Options{URL: "sqlite:///x/y.db", Path: "/h/state.db"}, backend: storeopen.SQLite, wher: "/x/y.db"},
		{o: storeopen.Options{URL: "postgres://u@h/db"}, backend: storeopen.Postgres, wher: "postgres://u@h/db"},
		{o: storeopen.Options{URL: "postgresql://u@h/db"}, backend: storeopen.Postgres, wher: "postgresql://u@h/db"},
		{o: storeopen.Options{URL: "sqlite://"}, bad: true},
		{o: storeopen.Options{URL: "mysql://u:pw@h/db"}, bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.o.URL+tt.o.Path, func(t *testing.T) {
			b, w, err := storeopen.Target(tt.o)
			if tt.bad {
				if err == nil {
					t.Fatalf("Target(%+v) accepted", tt.o)
				}
				return
			}
			if err != nil || b != tt.backend || w != tt.wher {
				t.Fatalf("Target = %s %s %v, want %s %s", b, w, err, tt.backend, tt.wher)
			}
		})
	}
	if got := storeopen.Describe(storeopen.Options{URL: "postgres://u:pw@h/db"}); got != "postgres://u:xxxxx@h/db" {
		t.Fatalf("Describe shows %q", got)
	}
}

func TestOpenSQLiteURL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	st, err := storeopen.Open(t.Context(), storeopen.Options{URL: "sqlite://" + path})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if s, ok := st.(*sqlite.Store); !ok || s.Path() != path {
		t.Fatalf("opened %T", st)
	}
}
