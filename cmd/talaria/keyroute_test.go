package main

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// The keys of the matrix below, and the host each belongs to unless a cell
// names it for another one.
const (
	keyOpenAI    = "sk-oai-secret"
	keyAnthropic = "sk-ant-secret"
	keyMine      = "sk-mine-secret"
)

// keysSent is every credential a request carried, in any of the headers
// the three wire formats use.
func keysSent(r fakellm.Request) []string {
	var out []string
	if a := r.Header.Get("Authorization"); a != "" {
		out = append(out, strings.TrimPrefix(a, "Bearer "))
	}
	for _, h := range []string{"X-Api-Key", "X-Goog-Api-Key"} {
		if v := r.Header.Get(h); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// Which key reaches which host, over real HTTP, for every way a person
// picks an endpoint: {no config, config, env-only} × {--api, --provider,
// --base-url, OPENAI_BASE_URL} × {which keys are set}. Three recording
// servers: A stands for OpenAI's host (OPENAI_BASE_URL points the built-in
// there, as it moves the vendor's SDK), N for Anthropic's
// (ANTHROPIC_BASE_URL), L for a server of the user's own. A key reaches a
// host only if it belongs to the entry of that host or the cell names it
// for that host (--api-key-env, key_env, or OPENAI_BASE_URL with
// OPENAI_API_KEY, the SDK's own pairing); no key ever reaches another.
func TestKeyReachesOnlyItsHost(t *testing.T) {
	mineConfig := "provider: mine\nproviders:\n  mine:\n    api: openai\n    base_url: {L}/v1\n    key_env: MY_KEY\n    model: m\n"
	all := map[string]string{"OPENAI_API_KEY": keyOpenAI, "ANTHROPIC_API_KEY": keyAnthropic, "MY_KEY": keyMine}
	only := func(names ...string) map[string]string {
		out := map[string]string{}
		for _, n := range names {
			out[n] = all[n]
		}
		return out
	}
	cases := []struct {
		name   string
		config string            // "" = no config file; {A} {N} {L} are the servers
		env    map[string]string // keys and TALARIA_* settings; {L} as above
		args   []string
		// wantHost got the one request, carrying wantKey ("" = none).
		wantHost, wantKey string
		// allow: the cell names this key for this host too.
		allow map[string]string
		// stderr must contain this.
		stderr string
	}{
		// No config file.
		{name: "no config/--api openai --base-url/anthropic key only", env: only("ANTHROPIC_API_KEY"),
			args: []string{"--api", "openai", "--base-url", "{L}/v1"}, wantHost: "L"},
		{name: "no config/--api openai --base-url/openai key only", env: only("OPENAI_API_KEY"),
			args: []string{"--api", "openai", "--base-url", "{L}/v1"}, wantHost: "L"},
		{name: "no config/--api openai --base-url/both keys", env: only("OPENAI_API_KEY", "ANTHROPIC_API_KEY"),
			args: []string{"--api", "openai", "--base-url", "{L}/v1"}, wantHost: "L"},
		{name: "no config/--base-url alone/both keys", env: only("OPENAI_API_KEY", "ANTHROPIC_API_KEY"),
			args: []string{"--base-url", "{L}/v1"}, wantHost: "L"},
		{name: "no config/--api anthropic --base-url/anthropic key", env: only("ANTHROPIC_API_KEY"),
			args: []string{"--api", "anthropic", "--base-url", "{L}"}, wantHost: "L"},
		{name: "no config/--provider anthropic --base-url/anthropic key", env: only("ANTHROPIC_API_KEY"),
			args: []string{"--provider", "anthropic", "--base-url", "{L}"}, wantHost: "L",
			stderr: "not sending ANTHROPIC_API_KEY to"},
		{name: "no config/--provider openai --base-url/both keys", env: only("OPENAI_API_KEY", "ANTHROPIC_API_KEY"),
			args: []string{"--provider", "openai", "--base-url", "{L}/v1"}, wantHost: "L", stderr: "--api-key-env OPENAI_API_KEY"},
		{name: "no config/--provider openai --base-url --api-key-env/both keys", env: only("OPENAI_API_KEY", "ANTHROPIC_API_KEY"),
			args:     []string{"--provider", "openai", "--base-url", "{L}/v1", "--api-key-env", "OPENAI_API_KEY"},
			wantHost: "L", wantKey: keyOpenAI, allow: map[string]string{keyOpenAI: "L"}},
		{name: "no config/--base-url --api-key-env MY_KEY/all keys", env: all,
			args: []string{"--base-url", "{L}/v1", "--api-key-env", "MY_KEY"}, wantHost: "L", wantKey: keyMine},
		{name: "no config/--api anthropic alone/both keys", env: only("OPENAI_API_KEY", "ANTHROPIC_API_KEY"),
			args: []string{"--api", "anthropic"}, wantHost: "N", wantKey: keyAnthropic},
		{name: "no config/--api openai alone/anthropic key only", env: only("ANTHROPIC_API_KEY"),
			args: []string{"--api", "openai"}, wantHost: "A"},
		{name: "no config/--provider openai/openai key", env: only("OPENAI_API_KEY"),
			args: []string{"--provider", "openai"}, wantHost: "A", wantKey: keyOpenAI},
		{name: "no config/no flags/anthropic key only", env: only("ANTHROPIC_API_KEY"),
			wantHost: "N", wantKey: keyAnthropic},
		{name: "no config/OPENAI_BASE_URL at L/both keys", env: with(only("OPENAI_API_KEY", "ANTHROPIC_API_KEY"), "OPENAI_BASE_URL", "{L}/v1"),
			wantHost: "L", wantKey: keyOpenAI, allow: map[string]string{keyOpenAI: "L"}},
		{name: "no config/OPENAI_BASE_URL at L/anthropic key only", env: with(only("ANTHROPIC_API_KEY"), "OPENAI_BASE_URL", "{L}/v1"),
			wantHost: "N", wantKey: keyAnthropic},
		{name: "no config/OPENAI_BASE_URL at L --provider anthropic/both keys", env: with(only("OPENAI_API_KEY", "ANTHROPIC_API_KEY"), "OPENAI_BASE_URL", "{L}/v1"),
			args: []string{"--provider", "anthropic"}, wantHost: "N", wantKey: keyAnthropic},
		{name: "no config/OPENAI_BASE_URL at L --api anthropic --base-url N/both keys", env: with(only("OPENAI_API_KEY", "ANTHROPIC_API_KEY"), "OPENAI_BASE_URL", "{L}/v1"),
			args: []string{"--api", "anthropic", "--base-url", "{N}"}, wantHost: "N"},

		// A config file naming a provider of the user's own.
		{name: "config/no flags/all keys", config: mineConfig, env: all, wantHost: "L", wantKey: keyMine},
		{name: "config/--base-url elsewhere/all keys", config: mineConfig, env: all,
			args: []string{"--base-url", "{A}/v1"}, wantHost: "A", stderr: "not sending MY_KEY"},
		{name: "config/--provider anthropic/all keys", config: mineConfig, env: all,
			args: []string{"--provider", "anthropic"}, wantHost: "N", wantKey: keyAnthropic},
		{name: "config/--api anthropic --base-url N/all keys", config: mineConfig, env: all,
			args: []string{"--api", "anthropic", "--base-url", "{N}"}, wantHost: "N"},
		{name: "config/--api anthropic --base-url N --api-key-env/all keys", config: mineConfig, env: all,
			args: []string{"--api", "anthropic", "--base-url", "{N}", "--api-key-env", "ANTHROPIC_API_KEY"}, wantHost: "N", wantKey: keyAnthropic},
		{name: "config/OPENAI_BASE_URL at L --provider openai/openai key", config: mineConfig, env: with(only("OPENAI_API_KEY"), "OPENAI_BASE_URL", "{L}/v1"),
			args: []string{"--provider", "openai"}, wantHost: "L", wantKey: keyOpenAI, allow: map[string]string{keyOpenAI: "L"}},
		{name: "config without provider/--api openai --base-url/anthropic key", config: "providers:\n  mine:\n    base_url: {A}/v1\n    key_env: MY_KEY\n",
			env: only("ANTHROPIC_API_KEY"), args: []string{"--api", "openai", "--base-url", "{L}/v1"}, wantHost: "L"},
		{name: "config provider anthropic/--base-url/anthropic key", config: "provider: anthropic\n", env: only("ANTHROPIC_API_KEY"),
			args: []string{"--base-url", "{L}"}, wantHost: "L"},

		// Environment only: TALARIA_PROVIDER, TALARIA_API, TALARIA_BASE_URL.
		{name: "env-only/TALARIA_API openai TALARIA_BASE_URL/both keys", env: with(with(only("OPENAI_API_KEY", "ANTHROPIC_API_KEY"), "TALARIA_API", "openai"), "TALARIA_BASE_URL", "{L}/v1"),
			wantHost: "L"},
		{name: "env-only/TALARIA_PROVIDER anthropic TALARIA_BASE_URL/anthropic key", env: with(with(only("ANTHROPIC_API_KEY"), "TALARIA_PROVIDER", "anthropic"), "TALARIA_BASE_URL", "{L}"),
			wantHost: "L"},
		{name: "env-only/TALARIA_PROVIDER anthropic/both keys", env: with(only("OPENAI_API_KEY", "ANTHROPIC_API_KEY"), "TALARIA_PROVIDER", "anthropic"),
			wantHost: "N", wantKey: keyAnthropic},
		{name: "env-only/TALARIA_PROVIDER openai --base-url/openai key", env: with(only("OPENAI_API_KEY"), "TALARIA_PROVIDER", "openai"),
			args: []string{"--base-url", "{L}/v1"}, wantHost: "L"},
		{name: "env-only/TALARIA_PROVIDER openai --base-url --api-key-env/openai key", env: with(only("OPENAI_API_KEY"), "TALARIA_PROVIDER", "openai"),
			args: []string{"--base-url", "{L}/v1", "--api-key-env", "OPENAI_API_KEY"}, wantHost: "L", wantKey: keyOpenAI, allow: map[string]string{keyOpenAI: "L"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newCLIEnv(t)
			hosts := map[string]*fakellm.Server{"A": e.srv, "N": fakellm.New(), "L": fakellm.New()}
			t.Cleanup(hosts["N"].Close)
			t.Cleanup(hosts["L"].Close)
			subst := func(s string) string {
				for h, srv := range hosts {
					s = strings.ReplaceAll(s, "{"+h+"}", srv.URL())
				}
				return s
			}
			e.env["OPENAI_BASE_URL"] = hosts["A"].OpenAIBaseURL()
			e.env["ANTHROPIC_BASE_URL"] = hosts["N"].AnthropicBaseURL()
			for k, v := range tc.env {
				e.env[k] = subst(v)
			}
			if tc.config != "" {
				e.writeConfig(subst(tc.config))
			}
			for _, srv := range hosts {
				srv.Script(fakellm.Text("ok"))
			}
			args := []string{"run", "--workspace", e.ws, "--model", testModel}
			for _, a := range tc.args {
				args = append(args, subst(a))
			}
			out := e.run("", append(args, "hi")...)

			// No key at a host it was not meant for, whatever else happened.
			belongs := map[string]string{keyOpenAI: "A", keyAnthropic: "N", keyMine: "L"}
			allowed := func(key, host string) bool {
				return belongs[key] == host || tc.allow[key] == host
			}
			names := slices.Sorted(maps.Keys(hosts))
			for _, h := range names {
				for _, r := range hosts[h].Requests() {
					for _, k := range keysSent(r) {
						if !allowed(k, h) {
							t.Errorf("host %s got key %q; it was not configured for that host", h, k)
						}
					}
				}
			}
			if out.code != exitOK || strings.TrimSpace(out.stdout) != "ok" {
				t.Fatalf("exit %d stdout %q\n%s", out.code, out.stdout, out.stderr)
			}
			for _, h := range names {
				reqs := hosts[h].Requests()
				if h != tc.wantHost {
					if len(reqs) != 0 {
						t.Errorf("host %s got %d requests, want none (the run belongs at %s)", h, len(reqs), tc.wantHost)
					}
					continue
				}
				if len(reqs) != 1 {
					t.Fatalf("host %s got %d requests, want 1", h, len(reqs))
				}
				got := keysSent(reqs[0])
				switch {
				case tc.wantKey == "" && len(got) != 0:
					t.Errorf("host %s got keys %q, want none", h, got)
				case tc.wantKey != "" && (len(got) != 1 || got[0] != tc.wantKey):
					t.Errorf("host %s got keys %q, want %q", h, got, tc.wantKey)
				}
			}
			if tc.stderr != "" && !strings.Contains(out.stderr, tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, out.stderr)
			}
		})
	}
}

func with(m map[string]string, k, v string) map[string]string {
	out := maps.Clone(m)
	out[k] = v
	return out
}

// The flags that aim keys are checked before anything is sent, and the
// errors name what the user typed.
func TestKeyFlagErrors(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want []string
		not  []string
	}{
		{"unset --api-key-env", nil, []string{"--base-url", "http://127.0.0.1:1/v1", "--api-key-env", "NOPE_KEY"},
			[]string{"--api-key-env NOPE_KEY", "not set"}, nil},
		{"unknown --api", nil, []string{"--api", "foo"},
			[]string{`--api "foo"`, "openai, openai-responses, anthropic, gemini"}, []string{"custom"}},
		{"unknown --api with --base-url", nil, []string{"--api", "foo", "--base-url", "http://127.0.0.1:1/v1"},
			[]string{`--api "foo"`}, []string{"custom", "providers."}},
		{"--base-url without --model", nil, []string{"--base-url", "http://127.0.0.1:1/v1"},
			[]string{"http://127.0.0.1:1/v1", "--model"}, []string{"custom", "providers."}},
		{"--base-url not a URL", nil, []string{"--base-url", "localhost:8000", "--model", "m"},
			[]string{"--base-url", "localhost:8000"}, []string{"custom", "providers."}},
		{"a vendor key named for another vendor's host", map[string]string{"ANTHROPIC_API_KEY": keyAnthropic},
			[]string{"--base-url", "https://api.openai.com/v1", "--api-key-env", "ANTHROPIC_API_KEY", "--model", "m"},
			[]string{"--api-key-env ANTHROPIC_API_KEY", "Anthropic"}, []string{"providers."}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newCLIEnv(t)
			maps.Copy(e.env, tc.env)
			out := e.run("", append(append([]string{"run", "--workspace", e.ws}, tc.args...), "hi")...)
			if out.code != exitUsage || len(errorLines(out.stderr)) != 1 {
				t.Fatalf("exit %d, want 2 and one error line:\n%s", out.code, out.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.stderr, w) {
					t.Errorf("stderr lacks %q: %s", w, out.stderr)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(out.stderr, w) {
					t.Errorf("stderr names %q, which the user never wrote: %s", w, out.stderr)
				}
			}
			if n := len(e.srv.Requests()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}
