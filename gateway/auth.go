package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"

	"github.com/talaria-agent/talaria/store"
)

// TokenPrefix starts every token, so a leaked one is easy to recognise.
const TokenPrefix = "tal_"

// HashToken is how tokens are stored: the hex SHA-256 of the secret. The
// secrets are 256 random bits, so a fast hash is enough.
func HashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// CreateToken makes a new token for principal, stores its hash and returns
// the secret, which is not kept anywhere.
func CreateToken(ctx context.Context, st store.Tokens, name, principal string) (string, *store.Token, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", nil, err
	}
	secret := TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	if principal == "" {
		principal = name
	}
	t := &store.Token{Name: name, Principal: principal, Hash: HashToken(secret)}
	if err := st.CreateToken(ctx, t); err != nil {
		return "", nil, err
	}
	return secret, t, nil
}

type principalKey struct{}

func principalOf(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}

// authenticate resolves the request's bearer token to its principal.
func (g *Gateway) authenticate(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	secret, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || strings.TrimSpace(secret) == "" {
		return "", errf(http.StatusUnauthorized, CodeUnauthorized, "send Authorization: Bearer <token> (create one with `talaria serve token create NAME`)")
	}
	t, err := g.store.TokenByHash(r.Context(), HashToken(strings.TrimSpace(secret)))
	if errors.Is(err, store.ErrNotFound) {
		return "", errf(http.StatusUnauthorized, CodeUnauthorized, "the token is unknown or revoked")
	}
	if err != nil {
		return "", storeError(err)
	}
	return t.Principal, nil
}

func (g *Gateway) authed(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := g.authenticate(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="talaria"`)
			writeError(w, err)
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	}
}
