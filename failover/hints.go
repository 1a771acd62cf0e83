package failover

import (
	"github.com/talaria-agent/talaria/internal/lazy"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/talaria-agent/talaria/llm"
)

// hints are the provider's statements about when to come back.
type hints struct {
	retryAfter time.Duration
	resetAt    time.Time
	// specific is set when the hint belongs to this failure (a Retry-After
	// header, a RetryInfo, "try again in 20s", "resets at …" in the body).
	// The x-ratelimit-* / anthropic-ratelimit-* headers ride on every
	// response, so they say when a window resets, not that this error will
	// clear: they do not make a quota message a rate limit.
	specific bool
}

// durExpr matches a duration as providers write it: Go/protobuf style
// ("1.5s", "644ms", "6m0s", "12h34m16s") or words ("30 seconds", "2 hours").
const durExpr = `(?:\d+(?:\.\d+)?(?:ms|h|m|s))+\b|(?:\d+(?:\.\d+)?\s*(?:milliseconds?|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h)\b\s*)+`

var (
	// "try again in 20s", "Please retry in 1.5s", "retry after 30 seconds".
	retryInRe = lazy.Regexp(`(?i)\b(?:try again|retry)\s+(?:in|after)\s+(` + durExpr + `)`)
	// "Your quota will reset after 12h34m16s", "resets in 2 hours".
	resetInRe = lazy.Regexp(`(?i)\bresets?\s+(?:in|after)\s+(` + durExpr + `)`)
	// Words that say the condition clears by itself, even without a number.
	selfClearingRe = lazy.Regexp(`(?i)\b(?:try again|retry (?:in|after|shortly|later)|please retry|resets\b|will reset|reset (?:at|in|after))`)
	durPartRe      = lazy.Regexp(`(?i)(\d+(?:\.\d+)?)\s*(milliseconds?|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h)\b`)
)

// readHints gathers retry and reset hints from headers, body layers and
// message text.
func readHints(h http.Header, layers []errLayer, text string, now time.Time) hints {
	var out hints
	if h != nil {
		if d, ok := llm.ParseRetryAfter(h, now); ok && d > 0 {
			out.retryAfter, out.specific = d, true
		}
		out.resetAt = headerReset(h, now)
	}
	for _, l := range layers {
		if out.retryAfter == 0 && l.RetryDelay > 0 {
			out.retryAfter, out.specific = l.RetryDelay, true
		}
		if l.ResetMillis > 0 {
			if t := epochTime(l.ResetMillis); t.After(now) {
				out.resetAt, out.specific = t, true
			}
		}
		if l.ResetIn > 0 && out.resetAt.IsZero() {
			out.resetAt, out.specific = now.Add(l.ResetIn), true
		}
	}
	if m := retryInRe().FindStringSubmatch(text); m != nil {
		if d := parseLooseDuration(m[1]); d > 0 && out.retryAfter == 0 {
			out.retryAfter = d
		}
	}
	if m := resetInRe().FindStringSubmatch(text); m != nil {
		if d := parseLooseDuration(m[1]); d > 0 {
			out.resetAt = now.Add(d)
		}
	}
	if selfClearingRe().MatchString(text) {
		out.specific = true
	}
	return out
}

// headerReset reads when the exhausted window resets: OpenAI-style relative
// durations (x-ratelimit-reset-requests: "6m0s"), Anthropic RFC 3339 times
// (anthropic-ratelimit-tokens-reset), Anthropic's unified reset (epoch
// seconds) and X-RateLimit-Reset (epoch seconds or milliseconds). A window
// whose remaining count is 0 is the one that was hit; without that signal
// the latest reset is taken.
func headerReset(h http.Header, now time.Time) time.Time {
	var hit, any time.Time
	consider := func(t time.Time, remaining string) {
		if t.IsZero() || !t.After(now) {
			return
		}
		if strings.TrimSpace(remaining) == "0" && t.After(hit) {
			hit = t
		}
		if t.After(any) {
			any = t
		}
	}
	for _, k := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
		if v := h.Get("x-ratelimit-reset-" + k); v != "" {
			if d := parseLooseDuration(v); d > 0 {
				consider(now.Add(d), h.Get("x-ratelimit-remaining-"+k))
			}
		}
		if v := h.Get("anthropic-ratelimit-" + k + "-reset"); v != "" {
			if t, err := time.Parse(time.RFC3339, strings.TrimSpace(v)); err == nil {
				consider(t, h.Get("anthropic-ratelimit-"+k+"-remaining"))
			}
		}
	}
	if v := h.Get("anthropic-ratelimit-unified-reset"); v != "" {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			consider(epochTime(n), "0")
		}
	}
	if v := h.Get("X-RateLimit-Reset"); v != "" {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			consider(epochTime(n), h.Get("X-RateLimit-Remaining"))
		}
	}
	if !hit.IsZero() {
		return hit
	}
	return any
}

// epochTime reads n as epoch milliseconds when it is too large to be
// seconds (both forms are in use).
func epochTime(n int64) time.Time {
	if n > 1e11 {
		return time.UnixMilli(n)
	}
	return time.Unix(n, 0)
}

// parseLooseDuration reads "1.5s", "644ms", "6m0s", "12h34m16s",
// "30 seconds", "2 hours"; 0 when nothing parses.
func parseLooseDuration(s string) time.Duration {
	s = strings.TrimSpace(s)
	if d, err := time.ParseDuration(s); err == nil {
		return d
	}
	var total time.Duration
	for _, m := range durPartRe().FindAllStringSubmatch(s, -1) {
		f, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			continue
		}
		unit := time.Second
		switch u := strings.ToLower(m[2]); {
		case u == "ms" || strings.HasPrefix(u, "milli"):
			unit = time.Millisecond
		case u == "m" || strings.HasPrefix(u, "min"):
			unit = time.Minute
		case u == "h" || strings.HasPrefix(u, "h"):
			unit = time.Hour
		}
		total += time.Duration(f * float64(unit))
	}
	return total
}
