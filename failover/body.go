package failover

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/talaria-agent/talaria/internal/jsonnum"
)

// errLayer is one error object found in a response body. A wrapped error
// (OpenRouter's metadata.raw, a gateway's upstream_error, a JSON document
// carried inside another error's message) yields several layers, outermost
// first.
type errLayer struct {
	Message   string
	Type      string
	Code      string // the code as text, whether the body had a string or a number
	NumCode   int    // a numeric (HTTP-like) code or status, 0 if none
	Status    string // Google's status enum ("RESOURCE_EXHAUSTED") or a text status
	Param     string
	Provider  string   // metadata.provider_name (OpenRouter)
	InnerCode string   // innererror.code (Azure OpenAI)
	Reasons   []string // Google ErrorInfo reasons and QuotaFailure quota ids
	// RetryDelay is Google's RetryInfo.retryDelay.
	RetryDelay time.Duration
	// ResetMillis is OpenRouter's metadata.headers X-RateLimit-Reset (epoch
	// ms), or a body's resets_at; ResetIn a body's resets_in_seconds.
	ResetMillis int64
	ResetIn     time.Duration
	// NCtx and NPrompt are llama.cpp's exceed_context_size_error counts.
	NCtx, NPrompt int
	// Upstream marks a layer unwrapped from an aggregator's metadata.raw or
	// upstream_error: another provider's answer relayed to us.
	Upstream bool
	// Anthropic marks Anthropic's envelope {"type":"error","error":{…}},
	// whose error.type values ("api_error", "overloaded_error") are only
	// meaningful there: Ollama also says "api_error", for a missing model.
	Anthropic bool
}

// maxUnwrap bounds how deep wrapped errors are followed.
const maxUnwrap = 6

// parseBody finds the error layers in a response body; nil when the body
// is not JSON or holds no recognisable error.
func parseBody(body []byte) []errLayer {
	v, ok := decodeJSON(bytes.TrimSpace(body))
	if !ok {
		return nil
	}
	var out []errLayer
	collect(v, false, 0, &out)
	return out
}

// decodeJSON decodes the first JSON value of b, keeping numbers exact,
// when b starts an object or an array (an error body worth reading).
func decodeJSON(b []byte) (any, bool) {
	if len(b) == 0 || (b[0] != '{' && b[0] != '[') {
		return nil, false
	}
	v, err := jsonnum.Decode(b)
	return v, err == nil
}

// collect appends the error layers of v, outermost first.
func collect(v any, upstream bool, depth int, out *[]errLayer) {
	if depth > maxUnwrap {
		return
	}
	switch t := v.(type) {
	case []any:
		// Gemini's OpenAI-compatible endpoint wraps its error in a list.
		if len(t) > 0 {
			collect(t[0], upstream, depth+1, out)
		}
	case map[string]any:
		switch e := t["error"].(type) {
		case map[string]any:
			addLayer(e, upstream, str(t["type"]) == "error", depth, out)
			return
		case string:
			// Ollama and llama-server proxies: {"error":"text"}, where the
			// text may itself be a JSON document.
			*out = append(*out, errLayer{Message: strings.TrimSpace(e), Upstream: upstream})
			nestedInText(e, upstream, depth, out)
			return
		}
		// A bare error object: older vLLM {"object":"error","message":…},
		// or an upstream body relayed without an "error" envelope.
		if _, ok := t["message"].(string); ok {
			addLayer(t, upstream, false, depth, out)
		}
	}
}

// addLayer records the error object e and follows what it wraps.
func addLayer(e map[string]any, upstream, anthropic bool, depth int, out *[]errLayer) {
	l := errLayer{
		Message: strings.TrimSpace(str(e["message"])),
		Type:    str(e["type"]),
		Param:   str(e["param"]),
		NCtx:    num(e["n_ctx"]),
		NPrompt: num(e["n_prompt_tokens"]),
	}
	l.Upstream, l.Anthropic = upstream, anthropic
	switch c := e["code"].(type) {
	case string:
		l.Code = c
		if n, err := strconv.Atoi(c); err == nil {
			l.NumCode = n
		}
	case json.Number:
		l.Code = c.String()
		l.NumCode = num(c)
	}
	switch s := e["status"].(type) {
	case string:
		l.Status = s
	case json.Number:
		if l.NumCode == 0 {
			l.NumCode = num(s)
		}
	}
	// ChatGPT-plan usage limits: "resets_at" (epoch seconds) and
	// "resets_in_seconds" say when the allowance returns.
	if at := num(e["resets_at"]); at > 0 {
		l.ResetMillis = int64(at) * 1000
	}
	if in := num(e["resets_in_seconds"]); in > 0 {
		l.ResetIn = time.Duration(in) * time.Second
	}
	if inner, ok := e["innererror"].(map[string]any); ok {
		l.InnerCode = str(inner["code"])
	}
	readGoogleDetails(e["details"], &l)
	meta, _ := e["metadata"].(map[string]any)
	if meta != nil {
		l.Provider = str(meta["provider_name"])
		if h, ok := meta["headers"].(map[string]any); ok {
			for k, v := range h {
				if strings.EqualFold(k, "X-RateLimit-Reset") {
					l.ResetMillis, _ = strconv.ParseInt(strings.TrimSpace(str(v)), 10, 64)
				}
			}
		}
	}
	*out = append(*out, l)

	// What this error wraps, most explicit first.
	if meta != nil {
		switch raw := meta["raw"].(type) {
		case string:
			if v, ok := decodeJSON([]byte(strings.TrimSpace(raw))); ok {
				collect(v, true, depth+1, out)
			} else if strings.TrimSpace(raw) != "" {
				*out = append(*out, errLayer{Message: strings.TrimSpace(raw), Upstream: true})
			}
			return
		case map[string]any:
			collect(raw, true, depth+1, out)
			return
		}
	}
	if up, ok := e["upstream_error"].(map[string]any); ok {
		collect(up, true, depth+1, out)
		return
	}
	nestedInText(l.Message, upstream, depth, out)
}

// nestedInText follows a JSON error document carried inside message text:
// Vertex relays Anthropic's body as its message, proxies prefix the upstream
// body with their own words ("Error from provider (x: 400): {…}").
func nestedInText(s string, upstream bool, depth int, out *[]errLayer) {
	i := strings.IndexAny(s, "{[")
	if i < 0 {
		return
	}
	if v, ok := decodeJSON([]byte(s[i:])); ok {
		collect(v, upstream, depth+1, out)
	}
}

// readGoogleDetails reads google.rpc detail entries: ErrorInfo reasons,
// QuotaFailure quota ids and RetryInfo delays.
func readGoogleDetails(v any, l *errLayer) {
	list, _ := v.([]any)
	for _, d := range list {
		m, _ := d.(map[string]any)
		if m == nil {
			continue
		}
		typ := str(m["@type"])
		switch {
		case strings.HasSuffix(typ, "ErrorInfo"):
			if r := str(m["reason"]); r != "" {
				l.Reasons = append(l.Reasons, r)
			}
		case strings.HasSuffix(typ, "QuotaFailure"):
			vs, _ := m["violations"].([]any)
			for _, v := range vs {
				if vm, ok := v.(map[string]any); ok {
					if q := str(vm["quotaId"]); q != "" {
						l.Reasons = append(l.Reasons, q)
					}
				}
			}
		case strings.HasSuffix(typ, "RetryInfo"):
			// Protobuf durations are decimal seconds with an "s" suffix.
			if d, err := time.ParseDuration(str(m["retryDelay"])); err == nil && d > 0 {
				l.RetryDelay = d
			}
		}
	}
}

func str(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case json.Number:
		return t.String()
	}
	return ""
}

func num(v any) int {
	switch t := v.(type) {
	case json.Number:
		if n, err := t.Int64(); err == nil {
			return int(n)
		}
	case string:
		if n, err := strconv.Atoi(strings.TrimSpace(t)); err == nil {
			return n
		}
	}
	return 0
}
