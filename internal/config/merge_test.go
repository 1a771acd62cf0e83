package config

import (
	"path/filepath"
	"testing"
)

// A partial entry for a built-in provider keeps the defaults it does not
// override; the key variable follows only while the endpoint is the
// built-in one.
func TestBuiltinEntriesMerge(t *testing.T) {
	cases := []struct {
		name, body string
		env        map[string]string
		entry      string
		want       Provider
		provider   string
	}{
		{
			name:  "anthropic: key_env and model only",
			body:  "providers:\n  anthropic:\n    key_env: MY_KEY\n    model: claude-sonnet-4-5\n",
			entry: "anthropic",
			want:  Provider{API: "anthropic", BaseURL: "https://api.anthropic.com", Model: "claude-sonnet-4-5", KeyEnv: "MY_KEY"},
		},
		{
			name:     "openai: key_strategy only",
			body:     "providers:\n  openai:\n    key_strategy: round-robin\n",
			env:      map[string]string{"OPENAI_API_KEY": "sk-a,sk-b"},
			entry:    "openai",
			want:     Provider{API: "openai", BaseURL: "https://api.openai.com/v1", Model: "gpt-4.1", KeyEnv: "OPENAI_API_KEY", KeyStrategy: "round-robin"},
			provider: "openai",
		},
		{
			name:  "openai speaking Responses keeps OpenAI's endpoint and key",
			body:  "providers:\n  openai:\n    api: openai-responses\n    model: gpt-5.4\n",
			entry: "openai",
			want:  Provider{API: "openai-responses", BaseURL: "https://api.openai.com/v1", Model: "gpt-5.4", KeyEnv: "OPENAI_API_KEY"},
		},
		{
			name:  "openai moved elsewhere: its key does not follow",
			body:  "providers:\n  openai:\n    base_url: http://127.0.0.1:8000/v1\n",
			entry: "openai",
			want:  Provider{API: "openai", BaseURL: "http://127.0.0.1:8000/v1", Model: "gpt-4.1"},
		},
		{
			name:  "OPENAI_BASE_URL moves the built-in with its key",
			body:  "-",
			env:   map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"},
			entry: "openai",
			want:  Provider{API: "openai", BaseURL: "http://127.0.0.1:9/v1", Model: "gpt-4.1", KeyEnv: "OPENAI_API_KEY"},
		},
		{
			name:     "TALARIA_API alone picks that built-in, not custom",
			body:     "-",
			env:      map[string]string{"TALARIA_API": "anthropic", "ANTHROPIC_API_KEY": "k"},
			entry:    "anthropic",
			want:     Provider{API: "anthropic", BaseURL: "https://api.anthropic.com", Model: "claude-sonnet-4-5", KeyEnv: "ANTHROPIC_API_KEY"},
			provider: "anthropic",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := load(t, tc.body, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			got := c.Providers[tc.entry]
			got.Headers = nil
			if got.API != tc.want.API || got.BaseURL != tc.want.BaseURL || got.Model != tc.want.Model ||
				got.KeyEnv != tc.want.KeyEnv || got.KeyStrategy != tc.want.KeyStrategy {
				t.Errorf("providers.%s = %+v, want %+v", tc.entry, got, tc.want)
			}
			if tc.provider != "" && c.Provider != tc.provider {
				t.Errorf("provider = %q, want %q", c.Provider, tc.provider)
			}
		})
	}
}

func TestPathsExpanded(t *testing.T) {
	home := t.TempDir()
	cwd, _ := filepath.Abs(".")
	cases := []struct {
		name, body string
		env        map[string]string
		want       string
	}{
		{"tilde", "database:\n  path: ~/.talaria/state.db\n", nil, filepath.Join(home, ".talaria/state.db")},
		{"variable", "database:\n  path: $DATA/t.db\n", map[string]string{"DATA": "/srv/data"}, "/srv/data/t.db"},
		{"braced variable", "database:\n  path: ${DATA}/t.db\n", map[string]string{"DATA": "/srv/data"}, "/srv/data/t.db"},
		{"explicit relative", "database:\n  path: ./here.db\n", nil, filepath.Join(cwd, "here.db")},
		{"TALARIA_DB with tilde", "-", map[string]string{"TALARIA_DB": "~/x.db"}, filepath.Join(home, "x.db")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"HOME": home}
			for k, v := range tc.env {
				env[k] = v
			}
			c, err := load(t, tc.body, env)
			if err != nil {
				t.Fatal(err)
			}
			if c.Database.Path != tc.want {
				t.Errorf("database path = %q, want %q", c.Database.Path, tc.want)
			}
		})
	}
	t.Run("TALARIA_HOME with tilde", func(t *testing.T) {
		got, err := Home(envOf(map[string]string{"HOME": home, "TALARIA_HOME": "~/th"}))
		if err != nil || got != filepath.Join(home, "th") {
			t.Errorf("Home = %q, %v; want %q", got, err, filepath.Join(home, "th"))
		}
	})
}
