package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/store"
)

// TokenPrefix starts every token, so a leaked one is easy to recognise.
const TokenPrefix = "tal_"

// MinConfigSecret is the shortest secret a configured token may have: the
// generated ones carry 256 random bits, and an operator's must not be
// guessable by the few attempts the rate limit lets through.
const MinConfigSecret = 32

// HashToken is how tokens are stored: the hex SHA-256 of the secret. The
// secrets are 256 random bits, so a fast hash is enough.
func HashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// CreateToken makes a new token for principal, stores its hash and returns
// the secret, which is not kept anywhere. An empty principal is the name;
// a blank name or principal, or a name a valid token has, is refused by
// the store (store.ErrTokenInvalid, store.ErrTokenNameTaken).
func CreateToken(ctx context.Context, st store.Tokens, name, principal, scope string) (string, *store.Token, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", nil, err
	}
	secret := TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	if principal == "" {
		principal = name
	}
	t := &store.Token{Name: name, Principal: principal, Scope: scope, Hash: HashToken(secret)}
	if err := t.Check(); err != nil {
		return "", nil, err
	}
	if err := st.CreateToken(ctx, t); err != nil {
		return "", nil, err
	}
	return secret, t, nil
}

// caller is who a request acts as: its token's principal and scope, and
// the token's hash, which a long stream checks again to end once the token
// is revoked.
type caller struct {
	principal string
	scope     string
	hash      string
}

type callerKey struct{}

func callerOf(ctx context.Context) caller {
	c, _ := ctx.Value(callerKey{}).(caller)
	return c
}

func principalOf(ctx context.Context) string { return callerOf(ctx).principal }

// bearer returns the credentials of an "Authorization: Bearer x" header;
// the scheme is case-insensitive (RFC 7235).
func bearer(h string) (string, bool) {
	scheme, secret, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	secret = strings.TrimSpace(secret)
	return secret, secret != ""
}

// authenticate resolves the request's bearer token to its caller.
func (g *Gateway) authenticate(r *http.Request) (caller, error) {
	secret, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		return caller{}, errf(http.StatusUnauthorized, api.CodeUnauthorized, "send Authorization: Bearer <token> (create one with `talaria serve token create NAME`)")
	}
	addr := clientAddr(r)
	if wait := g.authFail.blocked(addr, g.cfg.Now()); wait > 0 {
		return caller{}, &rateLimited{wait: wait}
	}
	hash := HashToken(secret)
	t, err := g.store.TokenByHash(r.Context(), hash)
	// A token stored before blank principals were refused must not act
	// as "every principal".
	if errors.Is(err, store.ErrNotFound) || err == nil && strings.TrimSpace(t.Principal) == "" {
		g.authFail.failed(addr, g.cfg.Now())
		return caller{}, errf(http.StatusUnauthorized, api.CodeUnauthorized, "the token is unknown or revoked")
	}
	if err != nil {
		return caller{}, storeError(err)
	}
	return caller{principal: t.Principal, scope: t.Scope, hash: hash}, nil
}

// rateLimited answers a client that failed authentication too often.
type rateLimited struct{ wait time.Duration }

func (e *rateLimited) Error() string { return "too many failed authentications" }

func (g *Gateway) authed(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, ok := g.authCaller(w, r, writeError)
		if !ok {
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	}
}

// authCaller authenticates r; on failure it answers through writeErr, so
// the native and OpenAI-compatible routes share the checks but keep their
// own error shapes, and reports false.
func (g *Gateway) authCaller(w http.ResponseWriter, r *http.Request, writeErr func(http.ResponseWriter, error)) (caller, bool) {
	c, err := g.authenticate(r)
	var rl *rateLimited
	if errors.As(err, &rl) {
		w.Header().Set("Retry-After", strconv.Itoa(int((rl.wait+time.Second-1)/time.Second)))
		writeErr(w, errf(http.StatusTooManyRequests, api.CodeTooManyFailures, "too many failed authentications from this address; retry later"))
		return caller{}, false
	}
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="talaria"`)
		writeErr(w, err)
		return caller{}, false
	}
	return c, true
}

// adminOnly serves next to admin tokens only.
func (g *Gateway) adminOnly(next http.HandlerFunc) http.HandlerFunc {
	return g.authed(func(w http.ResponseWriter, r *http.Request) {
		if callerOf(r.Context()).scope != store.ScopeAdmin {
			writeError(w, errf(http.StatusForbidden, api.CodeForbidden, "this route needs an admin token (`talaria serve token create NAME --admin`)"))
			return
		}
		next(w, r)
	})
}

// tokenValid reports whether the caller's token is still valid; a store
// that cannot answer keeps the stream (the next check decides).
func (g *Gateway) tokenValid(ctx context.Context) bool {
	c := callerOf(ctx)
	if c.hash == "" {
		return true
	}
	_, err := g.store.TokenByHash(ctx, c.hash)
	return !errors.Is(err, store.ErrNotFound)
}

// clientAddr is the address failed authentications are counted against:
// the connection's peer (behind a reverse proxy, the proxy's).
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// authFailures counts failed authentications per client address in fixed
// windows; an address over the limit is refused until its window ends.
// The table is bounded: when full, expired windows are dropped, and if
// none are, the table starts over (an attacker filling it from many
// addresses gets them a fresh window, never more than the limit each).
type authFailures struct {
	limit  int
	window time.Duration
	max    int

	mu sync.Mutex
	m  map[string]*failWindow
}

type failWindow struct {
	start time.Time
	n     int
}

func newAuthFailures(limit int, window time.Duration) *authFailures {
	return &authFailures{limit: limit, window: window, max: 65536, m: map[string]*failWindow{}}
}

// blocked returns how long addr must wait, 0 when it may try.
func (a *authFailures) blocked(addr string, now time.Time) time.Duration {
	if a.limit <= 0 {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	w, ok := a.m[addr]
	if !ok || now.Sub(w.start) >= a.window || w.n < a.limit {
		return 0
	}
	return a.window - now.Sub(w.start)
}

func (a *authFailures) failed(addr string, now time.Time) {
	if a.limit <= 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	w, ok := a.m[addr]
	if !ok || now.Sub(w.start) >= a.window {
		if !ok && len(a.m) >= a.max {
			for k, v := range a.m {
				if now.Sub(v.start) >= a.window {
					delete(a.m, k)
				}
			}
			if len(a.m) >= a.max {
				clear(a.m)
			}
		}
		w = &failWindow{start: now}
		a.m[addr] = w
	}
	w.n++
}
