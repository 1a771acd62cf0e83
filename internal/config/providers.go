package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// vendor is a company whose API a built-in provider entry talks to. The
// table ties a wire format, its official host and its key variable
// together, so that a key meant for one company is never sent to another.
type vendor struct {
	name    string // what a person calls it
	api     string
	host    string
	baseURL string
	keyEnv  string
	baseEnv string // the SDKs' own variable for another endpoint
	model   string
}

var vendors = map[string]vendor{
	"openai": {
		name: "OpenAI", api: "openai", host: "api.openai.com",
		baseURL: "https://api.openai.com/v1", keyEnv: "OPENAI_API_KEY",
		baseEnv: "OPENAI_BASE_URL", model: "gpt-4.1",
	},
	"anthropic": {
		name: "Anthropic", api: "anthropic", host: "api.anthropic.com",
		baseURL: "https://api.anthropic.com", keyEnv: "ANTHROPIC_API_KEY",
		baseEnv: "ANTHROPIC_BASE_URL", model: "claude-sonnet-4-5",
	},
}

// speaks reports whether the vendor's official host serves wire format api:
// OpenAI's serves Chat Completions and Responses.
func (v vendor) speaks(api string) bool {
	return api == v.api || (v.api == APIOpenAI && api == APIOpenAIResponses)
}

// otherHosts are official endpoints of vendors without a built-in entry:
// their key variables must not reach another vendor's host either.
var otherKeyHosts = map[string]string{
	"OPENROUTER_API_KEY": "openrouter.ai",
	"DEEPSEEK_API_KEY":   "api.deepseek.com",
	"MISTRAL_API_KEY":    "api.mistral.ai",
	"GEMINI_API_KEY":     "generativelanguage.googleapis.com",
}

// Built-in providers, usable with no config file. OPENAI_BASE_URL and
// ANTHROPIC_BASE_URL move them, as they move the vendors' own SDKs.
func builtinProviders(getenv func(string) string) map[string]Provider {
	out := make(map[string]Provider, len(vendors))
	for name, v := range vendors {
		base := v.baseURL
		if e := strings.TrimSpace(getenv(v.baseEnv)); e != "" {
			base = e
		}
		out[name] = Provider{API: v.api, BaseURL: base, Model: v.model, KeyEnv: v.keyEnv}
	}
	return out
}

// mergeBuiltin fills the fields a partial entry for a built-in provider
// leaves out from the built-in defaults. The key variable is inherited only
// while the entry still talks to the built-in endpoint: an entry that moves
// base_url elsewhere names its own key (or needs none), so the vendor's key
// never follows it to another host.
func mergeBuiltin(p, def Provider) Provider {
	if p.API == "" {
		p.API = def.API
	}
	if v, ok := vendorOfHost(def.BaseURL); p.API != def.API && !(ok && v.speaks(p.API)) {
		// Another wire format under a built-in name: nothing else of the
		// built-in applies; Check asks for a base_url.
		return p
	}
	if p.Model == "" {
		p.Model = def.Model
	}
	if p.BaseURL == "" {
		p.BaseURL = def.BaseURL
	}
	if p.KeyEnv == "" && len(p.Keys) == 0 && sameEndpoint(p.BaseURL, def.BaseURL) {
		p.KeyEnv = def.KeyEnv
	}
	return p
}

func sameEndpoint(a, b string) bool {
	return strings.TrimRight(strings.TrimSpace(a), "/") == strings.TrimRight(strings.TrimSpace(b), "/")
}

// hostOf returns the lower-case host name of a base URL ("" when it has none).
func hostOf(base string) string {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// vendorOfHost names the built-in vendor whose official host base is.
func vendorOfHost(base string) (vendor, bool) {
	h := hostOf(base)
	for _, v := range vendors {
		if h == v.host {
			return v, true
		}
	}
	return vendor{}, false
}

// keyHost is the official host the key variable env belongs to ("" for a
// variable Talaria does not know).
func keyHost(env string) (string, string) {
	for _, v := range vendors {
		if env == v.keyEnv {
			return v.host, v.name
		}
	}
	if h, ok := otherKeyHosts[env]; ok {
		return h, h
	}
	return "", ""
}

// Check reports an entry whose parts disagree: a wire format that is not
// the one its official host speaks, a vendor's key variable aimed at
// another vendor's host, or no endpoint at all. name is the entry's name as
// the user wrote it.
func (p Provider) Check(name string) error {
	return p.check(name, fieldNames{
		entry: "providers." + name, api: "providers." + name + ".api", baseURL: "providers." + name + ".base_url",
		keyEnv: "key_env", setAPI: "set api: ",
		noBase: "providers." + name + " has no base_url: set it to the server's API root (e.g. http://127.0.0.1:8000/v1)",
	})
}

// CheckFlags is Check for an entry the command line made or moved
// (--api, --base-url, --api-key-env): its errors name the flags the user
// typed, not config keys they never wrote.
func (p Provider) CheckFlags(name string) error {
	entry := "provider " + name
	if name == "custom" {
		entry = "--base-url " + p.BaseURL
	}
	return p.check(name, fieldNames{entry: entry, api: "--api", baseURL: "--base-url", keyEnv: "--api-key-env", setAPI: "pass --api ",
		noBase: entry + " has no base URL: pass --base-url with the server's API root (e.g. http://127.0.0.1:8000/v1)"})
}

// fieldNames are how errors name the parts of an entry.
type fieldNames struct{ entry, api, baseURL, keyEnv, setAPI, noBase string }

func (p Provider) check(name string, f fieldNames) error {
	if !ValidAPI(p.API) {
		return fmt.Errorf("%s is %q; use one of %s", f.api, p.API, APIChoice())
	}
	if p.BaseURL == "" {
		if v, ok := vendors[name]; ok && !v.speaks(p.API) {
			return fmt.Errorf("%s is %s, but %s is the built-in %s entry (api %s): set %s to the %s-compatible server, or use another name", f.api, p.API, name, v.name, v.api, f.baseURL, p.API)
		}
		return errors.New(f.noBase)
	}
	if u, err := url.Parse(p.BaseURL); err != nil || u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("%s %q is not a URL like http://127.0.0.1:8000/v1", f.baseURL, p.BaseURL)
	}
	if v, ok := vendorOfHost(p.BaseURL); ok && !v.speaks(p.API) {
		return fmt.Errorf("%s: api is %s but %s %s is %s's %s API; %s%s, or another base URL", f.entry, p.API, f.baseURL, p.BaseURL, v.name, v.api, f.setAPI, v.api)
	}
	host := hostOf(p.BaseURL)
	if kh, who := keyHost(p.KeyEnv); kh != "" && kh != host {
		if _, official := vendorOfHost(p.BaseURL); official || isOtherOfficial(host) {
			return fmt.Errorf("%s: %s %s holds a key for %s, but %s %s is another company's endpoint; Talaria does not send a key to a host it was not meant for: fix %s or %s", f.entry, f.keyEnv, p.KeyEnv, who, f.baseURL, p.BaseURL, f.keyEnv, f.baseURL)
		}
	}
	return nil
}

// SameHost reports whether two base URLs reach the same server (scheme,
// host and port): a key configured for one may go to the other.
func SameHost(a, b string) bool {
	ua, err1 := url.Parse(strings.TrimSpace(a))
	ub, err2 := url.Parse(strings.TrimSpace(b))
	if err1 != nil || err2 != nil || ua.Host == "" {
		return false
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host)
}

func isOtherOfficial(host string) bool {
	for _, h := range otherKeyHosts {
		if h == host {
			return true
		}
	}
	return false
}

// VendorName is how a person calls the company behind built-in entry name
// ("OpenAI"), or name itself.
func VendorName(name string) string {
	if v, ok := vendors[name]; ok {
		return v.name
	}
	return name
}

// BuiltinFor returns the name of the built-in entry speaking api
// ("openai", "anthropic").
func BuiltinFor(api string) (string, bool) {
	for name, v := range vendors {
		if v.api == api {
			return name, true
		}
	}
	return "", false
}
