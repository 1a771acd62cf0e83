package config

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// envOf is a getenv that sees only m.
func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// load writes body (unless it is "-": no file) into a temp home and loads it.
func load(t *testing.T, body string, env map[string]string) (*Config, error) {
	t.Helper()
	home := t.TempDir()
	if body != "-" {
		if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return Load(home, envOf(env))
}

func TestLoadWithoutFile(t *testing.T) {
	cases := []struct {
		name     string
		env      map[string]string
		provider string
	}{
		{"no keys", nil, ""},
		{"openai key", map[string]string{"OPENAI_API_KEY": "sk"}, "openai"},
		{"anthropic key", map[string]string{"ANTHROPIC_API_KEY": "sk"}, "anthropic"},
		{"both keys: openai first", map[string]string{"OPENAI_API_KEY": "a", "ANTHROPIC_API_KEY": "b"}, "openai"},
		{"blank key is no key", map[string]string{"OPENAI_API_KEY": ""}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := load(t, "-", tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if c.Provider != tc.provider {
				t.Errorf("provider = %q, want %q", c.Provider, tc.provider)
			}
			if c.File != "" || c.Approvals != "ask" || c.Database.Synchronous != "normal" || c.Database.Path != filepath.Join(c.Home, "state.db") {
				t.Errorf("defaults: file %q approvals %q sync %q db %q", c.File, c.Approvals, c.Database.Synchronous, c.Database.Path)
			}
			if got := c.ProviderNames(); !slices.Equal(got, []string{"anthropic", "openai"}) {
				t.Errorf("providers = %v", got)
			}
			if p := c.Providers["anthropic"]; p.API != "anthropic" || p.BaseURL != "https://api.anthropic.com" || p.KeyEnv != "ANTHROPIC_API_KEY" {
				t.Errorf("built-in anthropic = %+v", p)
			}
		})
	}
}

func TestLoadFile(t *testing.T) {
	body := `# a comment
provider: local
model: override-model
providers:
  local:
    base_url: http://127.0.0.1:8000/v1
    model: qwen
  openai:
    api: openai
    base_url: https://proxy.example/v1
    model: gpt-x
    key_env: MY_OPENAI
fallback:
  - provider: anthropic
    model: claude-haiku
approvals: auto
max_iterations: 12
shell_timeout: 90s
compression:
  threshold: 0.6
  timeout: 2m
database:
  synchronous: full
`
	c, err := load(t, body, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.File != filepath.Join(c.Home, "config.yaml") {
		t.Errorf("File = %q", c.File)
	}
	if c.Provider != "local" || c.Model != "override-model" || c.Approvals != "auto" || c.MaxIterations != 12 {
		t.Errorf("top level: %+v", c)
	}
	if p := c.Providers["local"]; p.API != "openai" || p.BaseURL != "http://127.0.0.1:8000/v1" || p.Model != "qwen" {
		t.Errorf("local (api defaults to openai) = %+v", p)
	}
	// A file's entry replaces the built-in of the same name; the other
	// built-in stays.
	if p := c.Providers["openai"]; p.BaseURL != "https://proxy.example/v1" || p.KeyEnv != "MY_OPENAI" {
		t.Errorf("openai = %+v", p)
	}
	if _, ok := c.Providers["anthropic"]; !ok {
		t.Error("built-in anthropic lost")
	}
	if len(c.Fallback) != 1 || c.Fallback[0] != (FallbackRoute{Provider: "anthropic", Model: "claude-haiku"}) {
		t.Errorf("fallback = %+v", c.Fallback)
	}
	if time.Duration(c.ShellTimeout) != 90*time.Second || time.Duration(c.Compression.Timeout) != 2*time.Minute || c.Compression.Threshold != 0.6 {
		t.Errorf("durations/threshold: %v %v %v", time.Duration(c.ShellTimeout), time.Duration(c.Compression.Timeout), c.Compression.Threshold)
	}
	if c.Database.Synchronous != "full" {
		t.Errorf("synchronous = %q", c.Database.Synchronous)
	}
}

func TestLoadEmptyFile(t *testing.T) {
	for _, body := range []string{"", "# only a comment\n", "\n\n"} {
		c, err := load(t, body, nil)
		if err != nil {
			t.Errorf("%q: %v", body, err)
			continue
		}
		if c.File == "" || c.Approvals != "ask" {
			t.Errorf("%q: file %q approvals %q", body, c.File, c.Approvals)
		}
	}
}

func TestLoadEnvOverrides(t *testing.T) {
	cases := []struct {
		name  string
		body  string
		env   map[string]string
		check func(t *testing.T, c *Config)
	}{
		{"provider and model", "-", map[string]string{"TALARIA_PROVIDER": "anthropic", "TALARIA_MODEL": "claude-x"}, func(t *testing.T, c *Config) {
			if c.Provider != "anthropic" || c.Model != "claude-x" {
				t.Errorf("provider %q model %q", c.Provider, c.Model)
			}
		}},
		{"database", "-", map[string]string{"TALARIA_DB": "/elsewhere/x.db"}, func(t *testing.T, c *Config) {
			if c.Database.Path != "/elsewhere/x.db" {
				t.Errorf("db = %q", c.Database.Path)
			}
		}},
		{"api and base url make a custom provider", "-", map[string]string{"TALARIA_API": "anthropic", "TALARIA_BASE_URL": "http://127.0.0.1:9000"}, func(t *testing.T, c *Config) {
			p := c.Providers["custom"]
			if c.Provider != "custom" || p.API != "anthropic" || p.BaseURL != "http://127.0.0.1:9000" {
				t.Errorf("provider %q = %+v", c.Provider, p)
			}
		}},
		{"base url edits the chosen provider", "provider: local\nproviders:\n  local:\n    base_url: http://a/v1\n    model: m\n",
			map[string]string{"TALARIA_BASE_URL": "http://b/v1"}, func(t *testing.T, c *Config) {
				if p := c.Providers["local"]; c.Provider != "local" || p.BaseURL != "http://b/v1" || p.Model != "m" {
					t.Errorf("provider %q = %+v", c.Provider, p)
				}
			}},
		{"environment beats the file", "provider: openai\n", map[string]string{"TALARIA_PROVIDER": "anthropic"}, func(t *testing.T, c *Config) {
			if c.Provider != "anthropic" {
				t.Errorf("provider %q", c.Provider)
			}
		}},
		{"file choice beats key detection", "provider: anthropic\n", map[string]string{"OPENAI_API_KEY": "sk"}, func(t *testing.T, c *Config) {
			if c.Provider != "anthropic" {
				t.Errorf("provider %q", c.Provider)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := load(t, tc.body, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

// Every load error is one line that names the file, and the line when the
// YAML decoder knows it.
func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name string
		body string
		env  map[string]string
		want []string
	}{
		{"syntax", "providers:\n  local: [oops\n", nil, []string{"line "}},
		{"tab indentation", "approvals: ask\n\tmax_iterations: 3\n", nil, []string{"line 2"}},
		{"unknown key", "provider: openai\napproval: auto\n", nil, []string{"line 2", "unknown key approval"}},
		{"unknown nested key", "providers:\n  local:\n    baseurl: http://x\n", nil, []string{"line 3", "unknown key baseurl"}},
		{"several problems on one line", "approval: auto\nmax_iteration: 3\n", nil, []string{"line 1: unknown key approval; line 2: unknown key max_iteration"}},
		{"wrong type", "max_iterations: lots\n", nil, []string{"line 1", "lots"}},
		{"bad duration", "shell_timeout: soon\n", nil, []string{"line 1", `"soon" is not a duration`}},
		// A leading number must not be read as seconds (issue 25 item 2).
		{"duration in words", "shell_timeout: 5 minutes\n", nil, []string{"line 1", `"5 minutes" is not a duration`, "90s"}},
		{"timeout in words", "timeouts:\n  response_header: 2 minutes\n", nil, []string{"line 2", `"2 minutes" is not a duration`}},
		{"compression timeout in words", "compression:\n  timeout: 30 secs\n", nil, []string{"line 2", `"30 secs"`}},
		{"number with a unit typo", "shell_timeout: 10sec\n", nil, []string{"line 1", `"10sec"`}},
		{"review idle in words", "review:\n  idle: 1 hour\n", nil, []string{"line 2", `"1 hour"`}},
		{"bad api", "providers:\n  x:\n    api: palm\n", nil, []string{"providers.x.api", "use one of openai, openai-responses, anthropic, gemini"}},
		{"thinking budget below the minimum", "providers:\n  x:\n    api: anthropic\n    base_url: http://127.0.0.1:1\n    thinking:\n      budget_tokens: 100\n", nil, []string{"providers.x.thinking.budget_tokens is 100"}},
		{"cache tier that does not exist", "providers:\n  x:\n    api: anthropic\n    base_url: http://127.0.0.1:1\n    cache_ttl: 2h\n", nil, []string{"providers.x.cache_ttl is \"2h\"", "5m or 1h"}},
		{"cache tier on a wire format without tiers", "providers:\n  x:\n    api: openai\n    base_url: http://127.0.0.1:1/v1\n    cache_ttl: 1h\n", nil, []string{"providers.x.cache_ttl", "anthropic"}},
		{"bad reasoning effort", "providers:\n  x:\n    api: openai-responses\n    base_url: http://127.0.0.1:1/v1\n    reasoning:\n      effort: max\n", nil, []string{"providers.x.reasoning.effort"}},
		{"responses api on openai's host is fine but anthropic's is not", "providers:\n  mine:\n    api: openai-responses\n    base_url: https://api.anthropic.com\n", nil, []string{"providers.mine", "Anthropic's anthropic API"}},
		{"bad key strategy", "providers:\n  x:\n    base_url: http://127.0.0.1:1/v1\n    key_strategy: random\n", nil, []string{"providers.x.key_strategy"}},
		{"custom entry without base_url", "providers:\n  x:\n    model: m\n", nil, []string{"providers.x has no base_url"}},
		{"built-in name with another api and no url", "providers:\n  openai:\n    api: anthropic\n", nil, []string{"providers.openai.api is anthropic", "base_url"}},
		{"anthropic key to the openai host", "providers:\n  openai:\n    key_env: ANTHROPIC_API_KEY\n", nil, []string{"providers.openai", "ANTHROPIC_API_KEY", "Anthropic", "api.openai.com"}},
		{"openai key to the anthropic host", "providers:\n  mine:\n    api: anthropic\n    base_url: https://api.anthropic.com\n    key_env: OPENAI_API_KEY\n", nil, []string{"providers.mine", "OPENAI_API_KEY"}},
		{"api disagrees with official url", "providers:\n  mine:\n    api: anthropic\n    base_url: https://api.openai.com/v1\n", nil, []string{"providers.mine", "OpenAI's openai API", "set api: openai"}},
		{"relative database path", "database:\n  path: state.db\n", nil, []string{"database.path", "relative", "./state.db"}},
		{"unset variable in database path", "database:\n  path: $NOPE_DIR/state.db\n", nil, []string{"database.path uses $NOPE_DIR, which is not set"}},
		{"other user's home", "database:\n  path: ~bob/state.db\n", nil, []string{"database.path", "~bob"}},
		{"relative sqlite database.url", "database:\n  url: sqlite://state.db\n", nil, []string{"database.url", "relative"}},
		{"unset variable in TALARIA_DB", "-", map[string]string{"TALARIA_DB": "$NOPE_DIR/x.db"}, []string{"TALARIA_DB uses $NOPE_DIR"}},
		{"unknown default provider", "provider: nope\n", nil, []string{`provider "nope" is not configured`, "anthropic, openai"}},
		{"unknown provider from env", "-", map[string]string{"TALARIA_PROVIDER": "nope"}, []string{`provider "nope"`}},
		{"unknown fallback", "fallback:\n  - provider: nope\n", nil, []string{"fallback[0].provider"}},
		{"approvals", "approvals: sometimes\n", nil, []string{"approvals is \"sometimes\""}},
		{"synchronous", "database:\n  synchronous: extra\n", nil, []string{"database.synchronous"}},
		{"on_failure", "compression:\n  on_failure: panic\n", nil, []string{"compression.on_failure"}},
		{"threshold", "compression:\n  threshold: 1.5\n", nil, []string{"compression.threshold"}},
		{"negative", "max_retries: -1\n", nil, []string{"max_retries is -1"}},
		{"negative timeout", "timeouts:\n  stream_idle: -5s\n", nil, []string{"timeouts.stream_idle"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.body, tc.env)
			if err == nil {
				t.Fatal("loaded without error")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans lines:\n%s", msg)
			}
			where := "config.yaml"
			if tc.body == "-" {
				where = "configuration"
			}
			if !strings.Contains(msg, where) {
				t.Errorf("error does not name %s: %s", where, msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q: %s", w, msg)
				}
			}
			if strings.Contains(msg, "config.Config") || strings.Contains(msg, "struct {") {
				t.Errorf("error names Go types: %s", msg)
			}
		})
	}
}

func TestLoadUnreadableFile(t *testing.T) {
	home := t.TempDir()
	// A directory where the file should be: reading it fails, and that is
	// not the same as "no file".
	if err := os.Mkdir(filepath.Join(home, "config.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Load(home, envOf(nil))
	if err == nil || !strings.Contains(err.Error(), "config.yaml") {
		t.Fatalf("err = %v", err)
	}
}

func TestDurationForms(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
	}{
		{"90s", 90 * time.Second},
		{"2m", 2 * time.Minute},
		{"1h30m", 90 * time.Minute},
		{"30", 30 * time.Second},
		{"1.5", 1500 * time.Millisecond},
		{`"45s"`, 45 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			c, err := load(t, "shell_timeout: "+tc.in+"\n", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := time.Duration(c.ShellTimeout); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHome(t *testing.T) {
	t.Run("TALARIA_HOME made absolute", func(t *testing.T) {
		got, err := Home(envOf(map[string]string{"TALARIA_HOME": "rel/dir"}))
		if err != nil || !filepath.IsAbs(got) || !strings.HasSuffix(got, filepath.Join("rel", "dir")) {
			t.Errorf("Home = %q, %v", got, err)
		}
	})
	t.Run("default under the user's home", func(t *testing.T) {
		got, err := Home(envOf(nil))
		if err != nil {
			t.Skipf("no home directory here: %v", err)
		}
		if filepath.Base(got) != ".talaria" {
			t.Errorf("Home = %q", got)
		}
	})
}

func TestKeyList(t *testing.T) {
	env := envOf(map[string]string{"K": " a , ,b,", "ONE": "solo"})
	cases := []struct {
		name string
		p    Provider
		want []string
	}{
		{"comma-separated, blanks dropped", Provider{KeyEnv: "K"}, []string{"a", "b"}},
		{"one key", Provider{KeyEnv: "ONE"}, []string{"solo"}},
		{"unset variable", Provider{KeyEnv: "UNSET"}, nil},
		{"no key_env", Provider{}, nil},
		{"inline keys win", Provider{KeyEnv: "K", Keys: []string{"inline"}}, []string{"inline"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.KeyList(env); !slices.Equal(got, tc.want) {
				t.Errorf("KeyList = %q, want %q", got, tc.want)
			}
		})
	}
}

// Paths from the environment follow the shell's rule, as flags do: ~ and
// $VAR expanded, a relative path resolved against the current directory
// (issue 25 item 8). The config file keeps refusing a bare relative path.
func TestEnvironmentPathsFollowTheShellRule(t *testing.T) {
	home := t.TempDir()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		env      map[string]string
		wantPath string
		wantURL  string
	}{
		{"relative TALARIA_DB", map[string]string{"TALARIA_DB": "x.db"}, filepath.Join(wd, "x.db"), ""},
		{"TALARIA_DB under ~", map[string]string{"TALARIA_DB": "~/d/x.db"}, filepath.Join(home, "d", "x.db"), ""},
		{"TALARIA_DB with a variable", map[string]string{"TALARIA_DB": "$DATA/x.db", "DATA": "/srv"}, "/srv/x.db", ""},
		{"sqlite URL under ~", map[string]string{"TALARIA_DATABASE_URL": "sqlite://~/y.db"}, "", "sqlite://" + filepath.Join(home, "y.db")},
		{"relative sqlite URL", map[string]string{"TALARIA_DATABASE_URL": "sqlite://y.db"}, "", "sqlite://" + filepath.Join(wd, "y.db")},
		{"absolute sqlite URL", map[string]string{"TALARIA_DATABASE_URL": "sqlite:///tmp/y.db"}, "", "sqlite:///tmp/y.db"},
		{"postgres URL untouched", map[string]string{"TALARIA_DATABASE_URL": "postgres://u@h/db"}, "", "postgres://u@h/db"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"HOME": home}
			maps.Copy(env, tc.env)
			c, err := load(t, "-", env)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantPath != "" && c.Database.Path != tc.wantPath {
				t.Errorf("path %q, want %q", c.Database.Path, tc.wantPath)
			}
			if c.Database.URL != tc.wantURL {
				t.Errorf("url %q, want %q", c.Database.URL, tc.wantURL)
			}
		})
	}
}
