package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	root "github.com/talaria-agent/talaria/app"
	"github.com/talaria-agent/talaria/gateway"
	"github.com/talaria-agent/talaria/internal/config"
	"github.com/talaria-agent/talaria/store"
)

var serveHelp = cmdHelp{
	name:  "serve",
	usage: "[flags]",
	about: `Serves the agent over HTTP: the JSON API under /v1 (Authorization: Bearer
TOKEN), Server-Sent Events, /metrics, /healthz, /readyz and the web page at
/. Uses the same config file, providers, fallback chain, guards and tools as
run. On the first start with no token, one is created and printed once.
SIGTERM or Ctrl+C stops accepting, lets running turns finish within --drain,
interrupts the rest, and exits 0.

API tokens:
  talaria serve token create NAME [--principal P]   print a new API token (only the token, on stdout)
  talaria serve token list [--json]
  talaria serve token revoke ID|NAME
'talaria serve token --help' says more.`,
	examples: []string{
		"talaria serve",
		"talaria serve --addr 0.0.0.0:7420 --tls-cert cert.pem --tls-key key.pem",
		"talaria serve --busy reject --max-concurrent-turns 8",
	},
}

var tokenHelp = cmdHelp{
	name:  "serve token",
	usage: "create|list|revoke ...",
	about: `Manages the API tokens of talaria serve (stored as hashes in the database).

Commands:
  talaria serve token create NAME [--principal P]   print a new API token (only the token, on stdout)
  talaria serve token list [--json]
  talaria serve token revoke ID|NAME

'talaria serve token COMMAND --help' shows one command's flags and examples.`,
	examples: []string{"talaria serve token create ci --principal robots", "talaria serve token list"},
}

var tokenSubs = map[string]cmdHelp{
	"create": {name: "serve token create", usage: "NAME [--principal P]",
		about: `Creates an API token and prints it (only the token, on stdout); it is
shown only now. Tokens of one principal see the same sessions.`,
		examples: []string{"talaria serve token create laptop", "TALARIA_TOKEN=$(talaria serve token create ci --principal robots)", "talaria serve token create ops --admin"}},
	"list": {name: "serve token list", usage: "[--json]",
		about:    "Lists the API tokens: id, name, principal, when created and whether revoked.",
		examples: []string{"talaria serve token list", "talaria serve token list --json"}},
	"revoke": {name: "serve token revoke", usage: "ID|NAME",
		about:    "Revokes every valid token with that id or name; requests with it are refused from then on.",
		examples: []string{"talaria serve token revoke laptop"}},
}

// serveFlags are serve's own flags beside the route flags.
type serveFlags struct {
	rf               routeFlags
	addr             string
	drain            time.Duration
	tlsCert, tlsKey  string
	busy             string
	maxTurns         int
	leaseTTL         time.Duration
	cert             tls.Certificate
	hasCert          bool
	scheme, announce string
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	f.rf.register(fs)
	fs.StringVar(&f.addr, "addr", "", "listen address (default serve.addr, else 127.0.0.1:7420)")
	fs.DurationVar(&f.drain, "drain", 0, "on shutdown, how long running turns may finish before they are interrupted (default serve.drain, else 30s)")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "TLS certificate file (serve HTTPS)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "TLS key file")
	fs.StringVar(&f.busy, "busy", "", "a message for a busy session: queue, interrupt, reject or steer (default serve.busy, else queue)")
	fs.IntVar(&f.maxTurns, "max-concurrent-turns", 0, "turns running at once (default serve.max_concurrent_turns, else 64)")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", 0, "turn lease lifetime: how soon another node takes over a dead node's sessions on a shared PostgreSQL database (default serve.lease_ttl, else 5m)")
}

func (c *cli) serveCmd(ctx context.Context, args []string) int {
	if len(args) > 0 && args[0] == "token" {
		return c.tokenCmd(ctx, args[1:])
	}
	h := serveHelp
	fs := h.flags()
	var f serveFlags
	f.register(fs)
	if code, done := c.parseFlags(fs, h, args); done {
		return code
	}
	if fs.NArg() > 0 {
		return c.usageError(h, "takes no arguments (did you mean `talaria serve token ...`?)")
	}
	cfg, err := c.loadConfig()
	if err != nil {
		return c.fail(exitUsage, "%v", err)
	}
	if code, ok := c.serveDefaults(&f, cfg.Serve); !ok {
		return code
	}
	log := c.logger(cfg, f.rf.verbose)
	o := c.options(&f.rf, log)
	g, err := root.NewGateway(ctx, cfg, o, root.GatewayOptions{Busy: f.busy, MaxConcurrentTurns: f.maxTurns, LeaseTTL: f.leaseTTL})
	if err != nil {
		return c.setupExit(err)
	}
	defer g.Close()
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return c.fail(exitUsage, "listen on %s: %v", f.addr, err)
	}
	if code, ok := c.serveStart(ctx, g, &f, cfg.Serve, ln, log); !ok {
		_ = ln.Close()
		return code
	}
	return c.serveUntilStopped(ctx, g, &f, cfg.Serve, ln, log)
}

// serveDefaults fills serve's flags from the config's serve section and
// loads the TLS pair; !ok: a usage error was printed (code).
func (c *cli) serveDefaults(f *serveFlags, sc config.Serve) (int, bool) {
	pick := func(flagV, cfgV, def string) string { return cmp.Or(flagV, cfgV, def) }
	f.addr = pick(f.addr, sc.Addr, "127.0.0.1:7420")
	f.tlsCert, f.tlsKey = pick(f.tlsCert, sc.TLSCert, ""), pick(f.tlsKey, sc.TLSKey, "")
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return c.usageError(serveHelp, "--tls-cert and --tls-key go together"), false
	}
	// Loaded before anything is announced: a missing or mismatched file is
	// a setup error, not a "serving on https://…" that then dies.
	if f.tlsCert != "" {
		var err error
		if f.cert, err = tls.LoadX509KeyPair(f.tlsCert, f.tlsKey); err != nil {
			return c.fail(exitUsage, "TLS certificate %s and key %s cannot be loaded: %v; check the paths and that the key belongs to the certificate", f.tlsCert, f.tlsKey, err), false
		}
		f.hasCert = true
	}
	if f.drain == 0 {
		f.drain = time.Duration(sc.Drain)
		if f.drain == 0 {
			f.drain = 30 * time.Second
		}
	}
	return 0, true
}

// serveStart warns about clear text, makes the configured tokens (and the
// first one, printed with url) and starts the gateway; !ok: it printed
// why (code).
func (c *cli) serveStart(ctx context.Context, g *root.Gateway, f *serveFlags, sc config.Serve, ln net.Listener, log *slog.Logger) (int, bool) {
	f.scheme = "http"
	if f.hasCert {
		f.scheme = "https"
	}
	f.announce = fmt.Sprintf("%s://%s/", f.scheme, ln.Addr())
	if host, _, _ := net.SplitHostPort(ln.Addr().String()); f.scheme == "http" && !isLoopback(host) {
		fmt.Fprintf(c.stderr, "talaria: WARNING: listening on %s without TLS: tokens and conversations cross the network in clear text; use --tls-cert/--tls-key or a TLS proxy\n", ln.Addr())
	}
	if err := c.configTokens(ctx, g.Store, sc.Tokens, log); err != nil {
		return c.setupExit(err), false
	}
	if err := c.firstToken(ctx, g.Store, f.announce); err != nil {
		return c.fail(exitOther, "%s", store.Describe(err)), false
	}
	if err := g.Start(ctx); err != nil {
		return c.fail(exitOther, "%s", store.Describe(err)), false
	}
	return 0, true
}

// serveUntilStopped serves g on ln until ctx ends or a signal comes, then
// drains: running turns get f.drain to finish; a second signal skips it.
func (c *cli) serveUntilStopped(ctx context.Context, g *root.Gateway, f *serveFlags, sc config.Serve, ln net.Listener, log *slog.Logger) int {
	// A hostile network: idle keep-alives and slow headers end, and the
	// connections are capped (total and per client address).
	srv := &http.Server{Handler: g.Handler(),
		ReadHeaderTimeout: durationOr(sc.ReadHeaderTimeout, 10*time.Second),
		IdleTimeout:       durationOr(sc.IdleTimeout, 60*time.Second),
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	ln = gateway.LimitListener(ln, intOr(sc.MaxConnections, 4096), intOr(sc.MaxConnectionsPerAddress, 256))
	fmt.Fprintf(c.stderr, "talaria: serving on %s (Ctrl+C or SIGTERM to stop; drain %s)\n", f.announce, f.drain)

	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	served := make(chan error, 1)
	go func() {
		if f.hasCert {
			srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{f.cert}}
			served <- srv.ServeTLS(ln, "", "")
		} else {
			served <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			_ = g.Shutdown(context.Background(), 0)
			return c.fail(exitOther, "serve: %v", err)
		}
	case <-ctx.Done():
	case <-sig:
	}
	fmt.Fprintf(c.stderr, "talaria: shutting down: running turns get %s to finish\n", f.drain)
	// The listener stays open during the drain: a new turn gets the
	// documented 503 shutting_down (not a refused connection), streams
	// see their turns end; then the server stops.
	gctx, cancel := context.WithTimeout(context.Background(), f.drain+20*time.Second)
	defer cancel()
	drained := make(chan struct{})
	go func() {
		// A second signal skips the drain.
		select {
		case <-sig:
			fmt.Fprintln(c.stderr, "talaria: second signal: interrupting running turns now")
			_ = g.Shutdown(gctx, 0)
		case <-drained:
		}
	}()
	if err := g.Shutdown(gctx, f.drain); err != nil {
		fmt.Fprintf(c.stderr, "talaria: %v\n", err)
	}
	close(drained)
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	_ = srv.Shutdown(sctx)
	scancel()
	fmt.Fprintln(c.stderr, "talaria: stopped")
	return exitOK
}

func durationOr(d config.Duration, def time.Duration) time.Duration {
	if d > 0 {
		return time.Duration(d)
	}
	return def
}

func intOr(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// configTokens makes the database's configuration-managed tokens what
// serve.tokens says: the configuration is their source of truth, so a
// token whose secret changed is replaced (the old secret is revoked), one
// whose entry is gone is revoked, and a name of serve.tokens belongs to
// that entry (another valid token with the name is revoked).
func (c *cli) configTokens(ctx context.Context, st store.Tokens, tokens []config.ServeToken, log *slog.Logger) error {
	want := map[string]store.Token{} // name → the token the config gives
	for _, t := range tokens {
		if strings.TrimSpace(t.Name) == "" || t.Env == "" {
			return &setupError{"serve.tokens: every entry needs name and env (the variable holding the secret)"}
		}
		if _, dup := want[t.Name]; dup {
			return &setupError{fmt.Sprintf("serve.tokens: the name %q is given twice; names are unique", t.Name)}
		}
		secret := strings.TrimSpace(c.getenv(t.Env))
		if secret == "" {
			return &setupError{fmt.Sprintf("serve.tokens %s: $%s is empty", t.Name, t.Env)}
		}
		if len(secret) < gateway.MinConfigSecret {
			return &setupError{fmt.Sprintf("serve.tokens %s: the secret in $%s has %d characters; use at least %d random ones (e.g. `openssl rand -hex 32`)", t.Name, t.Env, len(secret), gateway.MinConfigSecret)}
		}
		p := t.Principal
		if p == "" {
			p = t.Name
		}
		tok := store.Token{Name: t.Name, Principal: p, Scope: t.Scope, Hash: gateway.HashToken(secret), Managed: true}
		if err := tok.Check(); err != nil {
			return &setupError{fmt.Sprintf("serve.tokens %s: %v", t.Name, err)}
		}
		want[t.Name] = tok
	}
	list, err := st.ListTokens(ctx)
	if err != nil {
		return err
	}
	have := map[string]bool{} // names whose configured token is stored and valid
	for _, t := range list {
		w, named := want[t.Name]
		if !t.RevokedAt.IsZero() {
			if named && t.Hash == w.Hash {
				return &setupError{fmt.Sprintf("serve.tokens %s: this secret was revoked before; give the token a new one", t.Name)}
			}
			continue
		}
		switch {
		case named && t.Hash == w.Hash && t.Principal == w.Principal && t.Scope == w.Scope:
			have[t.Name] = true
			continue
		case !named && !t.Managed:
			continue
		case !named && t.Hash != "" && hashConfigured(want, t.Hash):
			return &setupError{fmt.Sprintf("serve.tokens: a configured secret is already the token %q's", t.Name)}
		}
		// Rotated, changed, taken over by the config, or removed from it.
		if err := st.RevokeToken(ctx, t.ID); err != nil {
			return err
		}
		log.Info("serve: revoked a configured token", "name", t.Name, "id", t.ID)
	}
	for _, t := range tokens {
		if have[t.Name] {
			continue
		}
		w := want[t.Name]
		if err := st.CreateToken(ctx, &w); err != nil {
			return err
		}
	}
	return nil
}

func hashConfigured(want map[string]store.Token, hash string) bool {
	for _, w := range want {
		if w.Hash == hash {
			return true
		}
	}
	return false
}

// firstToken creates and prints a token when the database has none, so a
// fresh install can be used at once.
func (c *cli) firstToken(ctx context.Context, st store.Tokens, url string) error {
	list, err := st.ListTokens(ctx)
	if err != nil {
		return err
	}
	if len(list) > 0 {
		return nil
	}
	// The operator's own: the only token that exists is an admin one.
	secret, _, err := gateway.CreateToken(ctx, st, "default", "default", store.ScopeAdmin)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "talaria: created the first API token (shown only now; `talaria serve token create NAME` makes more):\n%s\nweb page: %s\n", secret, url)
	return nil
}

func (c *cli) tokenCmd(ctx context.Context, args []string) int {
	if wantsHelp(args) {
		c.printHelp(tokenHelp.flags(), tokenHelp)
		return exitOK
	}
	if len(args) == 0 {
		return c.usageError(tokenHelp, "needs a command: create, list or revoke")
	}
	sub, rest := args[0], args[1:]
	h, ok := tokenSubs[sub]
	if !ok {
		return c.usageError(tokenHelp, "unknown token command %q: use create, list or revoke", sub)
	}
	fs := h.flags()
	var principal *string
	var jsonOut, admin *bool
	switch sub {
	case "create":
		principal = fs.String("principal", "", "the tenant the token acts as (default: NAME); tokens of one principal see the same sessions")
		admin = fs.Bool("admin", false, "an operator's token: may also read /metrics")
	case "list":
		jsonOut = fs.Bool("json", false, "print JSON")
	}
	var dbFlag string
	databaseFlag(fs, &dbFlag)
	// Flags may come after the name.
	var pos []string
	for len(rest) > 0 {
		if code, done := c.parseFlags(fs, h, rest); done {
			return code
		}
		rest = fs.Args()
		if len(rest) > 0 {
			pos, rest = append(pos, rest[0]), rest[1:]
		}
	}
	switch {
	case sub == "create" && len(pos) != 1:
		return c.usageError(h, "needs one token name")
	case sub == "revoke" && len(pos) != 1:
		return c.usageError(h, "needs one token id or name")
	case sub == "list" && len(pos) > 0:
		return c.usageError(h, "takes no arguments (got %q)", pos[0])
	}
	cfg, err := c.loadConfig()
	if err != nil {
		return c.fail(exitUsage, "%v", err)
	}
	st, err := openStore(ctx, cfg, dbFlag, c.logger(cfg, false))
	if err != nil {
		return c.fail(exitOther, "%s", store.Describe(err))
	}
	defer st.Close()
	switch sub {
	case "create":
		return c.tokenCreate(ctx, st, h, pos[0], *principal, *admin)
	case "list":
		return c.tokenList(ctx, st, *jsonOut)
	}
	return c.tokenRevoke(ctx, st, pos[0])
}

// tokenCreate prints a new token named name.
func (c *cli) tokenCreate(ctx context.Context, st store.Tokens, h cmdHelp, name, principal string, admin bool) int {
	scope := ""
	if admin {
		scope = store.ScopeAdmin
	}
	secret, _, err := gateway.CreateToken(ctx, st, name, principal, scope)
	switch {
	case errors.Is(err, store.ErrTokenInvalid):
		return c.usageError(h, "%v", err)
	case errors.Is(err, store.ErrTokenNameTaken):
		return c.fail(exitUsage, "a valid token is already named %q; names are unique (revoke it first, or pick another name)", name)
	case err != nil:
		return c.fail(exitOther, "%s", store.Describe(err))
	}
	fmt.Fprintln(c.stdout, secret)
	return exitOK
}

// tokenList prints the tokens, as JSON with jsonOut.
func (c *cli) tokenList(ctx context.Context, st store.Tokens, jsonOut bool) int {
	list, err := st.ListTokens(ctx)
	if err != nil {
		return c.fail(exitOther, "%s", store.Describe(err))
	}
	if jsonOut {
		type row struct {
			ID        string     `json:"id"`
			Name      string     `json:"name"`
			Principal string     `json:"principal"`
			Scope     string     `json:"scope,omitempty"`
			Managed   bool       `json:"managed,omitempty"`
			CreatedAt time.Time  `json:"created_at"`
			RevokedAt *time.Time `json:"revoked_at,omitempty"`
		}
		out := []row{}
		for _, t := range list {
			r := row{ID: t.ID, Name: t.Name, Principal: t.Principal, Scope: t.Scope, Managed: t.Managed, CreatedAt: t.CreatedAt}
			if !t.RevokedAt.IsZero() {
				r.RevokedAt = &t.RevokedAt
			}
			out = append(out, r)
		}
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(out)
		return exitOK
	}
	for _, t := range list {
		state := "valid"
		if !t.RevokedAt.IsZero() {
			state = "revoked " + t.RevokedAt.Local().Format(time.DateTime)
		}
		fmt.Fprintf(c.stdout, "%s  %-16s principal %-12s created %s  %s\n", t.ID, t.Name, t.Principal, t.CreatedAt.Local().Format(time.DateTime), state)
	}
	return exitOK
}

// tokenRevoke revokes every valid token with id or name which.
func (c *cli) tokenRevoke(ctx context.Context, st store.Tokens, which string) int {
	list, err := st.ListTokens(ctx)
	if err != nil {
		return c.fail(exitOther, "%s", store.Describe(err))
	}
	var ids []string
	for _, t := range list {
		if (t.ID == which || t.Name == which) && t.RevokedAt.IsZero() {
			ids = append(ids, t.ID)
		}
	}
	if len(ids) == 0 {
		return c.fail(exitUsage, "no valid token with id or name %q (see `talaria serve token list`)", which)
	}
	for _, id := range ids {
		if err := st.RevokeToken(ctx, id); err != nil {
			return c.fail(exitOther, "%s", store.Describe(err))
		}
		fmt.Fprintf(c.stderr, "talaria: revoked %s\n", id)
	}
	return exitOK
}
