package failover

import (
	"bytes"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/talaria-agent/talaria/llm"
)

// verdict is a stage's answer, before flags and words are filled in.
type verdict struct {
	class      Class
	uncertain  bool
	fallback   bool // format_error only: another route could accept the request
	unverified bool // billing read from ambiguous text
	capLimit   int
}

func is(c Class) verdict { return verdict{class: c} }

// facts is what Classify derives from an Input once.
type facts struct {
	in        Input
	now       time.Time
	layers    []errLayer
	up        errLayer // the innermost layer with a message: the provider that actually failed
	status    int      // the HTTP status to classify by
	text      string   // lower-cased provider text
	emptyBody bool     // no body, or an empty JSON object
	upstream  bool     // an aggregator relayed another provider's error
	hints     hints
}

// maxTextBytes bounds how much of a non-JSON body is matched.
const maxTextBytes = 2048

func newFacts(in Input) *facts {
	f := &facts{in: in, now: in.Now, status: in.Status}
	if f.now.IsZero() {
		f.now = time.Now()
	}
	body := bytes.TrimSpace(in.Body)
	f.layers = parseBody(body)
	f.emptyBody = len(f.layers) == 0 && (len(body) == 0 || string(body) == "{}" || string(body) == "null")

	var msgs []string
	for i := range f.layers {
		l := &f.layers[i]
		// Besides metadata.raw, OpenRouter names the upstream with a bare
		// provider_name under its generic "Provider returned error", and
		// on its own 429s relays the upstream's limit the same way.
		if l.Provider != "" && (strings.EqualFold(l.Message, "Provider returned error") ||
			(in.Status == 429 && isOpenRouter(in))) {
			l.Upstream = true
		}
		// The Anthropic adapter's bodies are Anthropic's even when a proxy
		// stripped the {"type":"error"} envelope.
		if in.API == "anthropic" {
			l.Anthropic = true
		}
		if l.Message != "" {
			msgs = append(msgs, l.Message)
			f.up = *l
		}
		f.upstream = f.upstream || l.Upstream
	}
	if f.up.Message == "" && len(f.layers) > 0 {
		f.up = f.layers[len(f.layers)-1]
	}
	switch {
	case len(msgs) > 0:
	case len(f.layers) == 0 && len(body) > 0:
		// A non-JSON body: a proxy's text or HTML page.
		msgs = append(msgs, string(body[:min(len(body), maxTextBytes)]))
		fallthrough
	default:
		if in.Message != "" {
			msgs = append(msgs, in.Message)
		}
	}
	f.text = strings.ToLower(strings.Join(msgs, "\n"))

	// An error event inside a 200 stream, or a relayed upstream error, may
	// carry the status that really applies.
	if f.status == 0 || (f.status >= 200 && f.status < 300) {
		for _, l := range f.layers {
			if l.NumCode >= 400 && l.NumCode < 600 {
				f.status = l.NumCode
				break
			}
		}
	} else if f.upstream && f.up.NumCode >= 400 && f.up.NumCode < 600 {
		f.status = f.up.NumCode
	}
	f.hints = readHints(in.Header, f.layers, f.text, f.now)
	return f
}

// isOpenRouter recognises OpenRouter by name or base URL.
func isOpenRouter(in Input) bool {
	return strings.EqualFold(in.Provider, "openrouter") || strings.Contains(strings.ToLower(in.BaseURL), "openrouter.ai")
}

// large reports a session big enough that a bare failure is most likely an
// overflow: over ~60% of the window, or over 200 messages.
func (f *facts) large() bool {
	in := f.in
	return (in.ContextWindow > 0 && in.ContextTokens*10 > in.ContextWindow*6) || in.Messages > 200
}

// Classify maps one failure to a class and its recovery. Stages, in order:
// provider-specific shapes (unwrapping errors relayed inside another
// provider's body first), HTTP status (refined, for statuses that mean
// several things, by body codes and message text), body error code/type,
// message patterns, transport. Anything unmatched is unknown and retryable.
func Classify(in Input) Classified {
	f := newFacts(in)
	var v verdict
	ok := false
	if in.Transport == llm.TransportCanceled {
		v, ok = is(ClassCanceled), true
	}
	if in.Malformed && !ok {
		// A 200 that is no answer: the endpoint is not the API it should
		// be (another service, a proxy page); fall back, else stop.
		v, ok = is(ClassEndpointNotFound), true
	}
	for _, stage := range []func(*facts) (verdict, bool){byProviderShape, byStatus, byCode, byMessage, byTransport} {
		if ok {
			break
		}
		v, ok = stage(f)
	}
	if !ok {
		v = verdict{class: ClassUnknown, uncertain: true}
	}
	// An aggregator's 429 that relays an upstream provider's rate limit: our
	// key is fine, so fall back instead of rotating.
	if f.upstream && v.class == ClassRateLimit && (in.Status == 429 || f.status == 429) {
		v.class = ClassUpstreamRateLimit
	}
	return f.finish(v)
}

// maxProviderMessage bounds ProviderMessage.
const maxProviderMessage = 600

// finish fills flags, hints and words.
func (f *facts) finish(v verdict) Classified {
	r, _ := recoveryOf(v.class)
	c := Classified{
		Class: v.class, Retryable: r.retryable, RotateCredential: r.rotate, Fallback: r.fallback,
		Compress: r.compress, Certain: !v.uncertain, Status: f.in.Status,
		Provider: f.in.Provider, Model: f.in.Model, OutputCapLimit: v.capLimit,
		RetryAfter: f.hints.retryAfter, ResetAt: f.hints.resetAt,
		Transport: f.in.Transport, Connect: f.in.Connect, BaseURL: f.in.BaseURL, NoKeyHint: f.in.NoKeyHint,
		Malformed: f.in.Malformed,
	}
	if v.class == ClassFormatError {
		c.Fallback = v.fallback
	}
	if v.class == ClassBilling && v.unverified {
		c.BillingUnverified, c.PossibleContentFilter, c.Certain = true, true, false
	}
	if f.upstream {
		for _, l := range f.layers {
			if l.Provider != "" {
				c.UpstreamProvider = l.Provider
				break
			}
		}
	}
	c.ProviderMessage = providerMessage(f)
	c.Summary = summary(c)
	c.Advice = advice(c)
	return c
}

func providerMessage(f *facts) string {
	msg := f.up.Message
	if msg == "" && len(f.layers) == 0 {
		// A plain-text body says more than the client's message; an HTML
		// error page does not.
		body := bytes.TrimSpace(f.in.Body)
		if len(body) > 0 && body[0] != '<' {
			msg = string(body)
		} else {
			msg = f.in.Message
		}
	}
	return clip(strings.Join(strings.Fields(msg), " "), maxProviderMessage)
}

// clip cuts s to at most n bytes and an ellipsis, never inside a
// character.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
