package config

import "testing"

// database.url selects PostgreSQL; TALARIA_DATABASE_URL overrides it.
func TestDatabaseURL(t *testing.T) {
	tests := []struct {
		name, body string
		env        map[string]string
		want       string
	}{
		{"unset", "-", nil, ""},
		{"file", "database:\n  url: postgres://u@h/db\n", nil, "postgres://u@h/db"},
		{"env", "-", map[string]string{"TALARIA_DATABASE_URL": "postgres://e@h/db"}, "postgres://e@h/db"},
		{"env over file", "database:\n  url: postgres://u@h/db\n", map[string]string{"TALARIA_DATABASE_URL": "sqlite:///x.db"}, "sqlite:///x.db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := load(t, tt.body, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if c.Database.URL != tt.want {
				t.Fatalf("Database.URL = %q, want %q", c.Database.URL, tt.want)
			}
		})
	}
}
