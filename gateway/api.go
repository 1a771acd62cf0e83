package gateway

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/internal/apiview"
	"github.com/talaria-agent/talaria/store"
)

//go:embed openapi.json
var openapiSpec []byte

// Handler returns the HTTP routes.
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	a := func(h http.HandlerFunc) http.HandlerFunc { return g.authed(g.rateLimited(h)) }
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	})
	mux.HandleFunc("GET /readyz", g.readyz)
	for _, rt := range g.apiRoutes() {
		mux.HandleFunc(rt.pattern, rt.h)
	}
	mux.Handle("GET /metrics", g.adminOnly(g.m.handler().ServeHTTP))
	mux.HandleFunc("/v1/", a(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errf(http.StatusNotFound, api.CodeNotFound, "no route "+r.Method+" "+r.URL.Path))
	}))
	mux.Handle("/", webHandler())
	return g.m.instrument(g.withLimits(mux))
}

// route is one authenticated /v1 pattern and its handler. The table is
// what the OpenAPI test holds the published spec against.
type route struct {
	pattern string
	h       http.HandlerFunc
}

// apiRoutes lists the /v1 routes: the native API, then the
// OpenAI-compatible ones (openai.go), which authenticate in OpenAI's
// error shape.
func (g *Gateway) apiRoutes() []route {
	a := func(h http.HandlerFunc) http.HandlerFunc { return g.authed(g.rateLimited(h)) }
	native := []route{
		{"GET /v1/openapi.json", a(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(openapiSpec)
		})},
		{"POST /v1/sessions", a(g.createSession)},
		{"GET /v1/sessions", a(g.listSessions)},
		{"GET /v1/sessions/{id}", a(g.getSession)},
		{"DELETE /v1/sessions/{id}", a(g.deleteSession)},
		{"GET /v1/sessions/{id}/messages", a(g.listMessages)},
		{"GET /v1/sessions/{id}/usage", a(g.usage)},
		{"POST /v1/sessions/{id}/messages", a(g.postMessage)},
		{"GET /v1/sessions/{id}/events", a(g.events)},
		{"GET /v1/search", a(g.search)},
		{"POST /v1/turns/{id}/interrupt", a(g.interruptTurn)},
		{"POST /v1/turns/{id}/approvals/{call}", a(g.approve)},
		{"POST /v1/explain-error", a(g.explainError)},
	}
	return append(native, g.openAIRoutes()...)
}

// withLimits caps request bodies for every route, bounds the time to read
// a non-streaming request, and sets the security headers.
func (g *Gateway) withLimits(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w, r)
		// A read deadline for the whole request (a slow body cannot hold
		// the connection); event streams clear it once the body is read.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(g.cfg.ReadTimeout))
		if g.draining.Load() {
			// Answers still come during the drain (503 for new turns),
			// but the client should reconnect elsewhere afterwards.
			w.Header().Set("Connection", "close")
		}
		if r.ContentLength > g.cfg.MaxBodyBytes {
			writeError(w, errf(http.StatusRequestEntityTooLarge, api.CodeBodyTooLarge, "the request body is larger than the limit"))
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, g.cfg.MaxBodyBytes)
		}
		next.ServeHTTP(w, r)
	})
}

func (g *Gateway) readyz(w http.ResponseWriter, r *http.Request) {
	if err := g.ready.check(r.Context(), g); err != nil {
		// Anyone may ask, so the answer names no path, DSN, user or host;
		// the log has the whole error.
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ok": false, "error": errf(http.StatusServiceUnavailable, api.CodeStoreFailure, "the database cannot be read or written")})
		return
	}
	if g.draining.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ok": false, "error": errf(http.StatusServiceUnavailable, api.CodeShuttingDown, "draining")})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}

// readiness is the last database check /readyz made: it is reused for a
// second, so unauthenticated probes cannot turn into a stream of writes.
type readiness struct {
	mu  sync.Mutex
	at  time.Time
	err error
}

func (rd *readiness) check(ctx context.Context, g *Gateway) error {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	now := g.cfg.Now()
	if !rd.at.IsZero() && now.Sub(rd.at) < time.Second && now.After(rd.at) {
		return rd.err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := g.store.ListSessions(ctx, store.ListOptions{Limit: 1})
	if wc, ok := g.store.(store.WriteChecker); ok && err == nil {
		err = wc.CheckWrite(ctx)
	}
	if err != nil {
		g.log.Warn("readyz: the database is not ready", "err", err)
	}
	rd.at, rd.err = now, err
	return err
}

// SessionView is a session as the API shows it: the public shape in
// package api, shared with the Go client and the CLI's --json.
type SessionView = api.Session

// UsageView is a session's accumulated usage (api.Usage).
type UsageView = api.Usage

func (g *Gateway) view(s *store.Session) SessionView {
	v := apiview.Session(s, g.workspaceName(s.Cwd))
	g.mu.Lock()
	st := g.sessions[s.ID]
	g.mu.Unlock()
	if st != nil {
		st.mu.Lock()
		v.Busy, v.Queued = st.running != nil, st.pending
		st.mu.Unlock()
	}
	return v
}

// owned loads a session the request's principal owns; any other is 404, so
// ids of other tenants' sessions are not even confirmed.
func (g *Gateway) owned(r *http.Request) (*store.Session, error) {
	id := r.PathValue("id")
	s, err := g.store.GetSession(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) || err == nil && s.Principal != principalOf(r.Context()) {
		return nil, errf(http.StatusNotFound, api.CodeNotFound, "no session "+id)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

type createSessionRequest struct {
	Title             string `json:"title"`
	Workspace         string `json:"workspace"`
	Provider          string `json:"provider"`
	Model             string `json:"model"`
	SystemPromptExtra string `json:"system_prompt_extra"`
}

func (g *Gateway) createSession(w http.ResponseWriter, r *http.Request) {
	var req createSessionRequest
	if r.ContentLength != 0 {
		if err := decodeBody(w, r, g.cfg.MaxBodyBytes, &req); err != nil {
			writeError(w, err)
			return
		}
	}
	principal := principalOf(r.Context())
	// The allow-list before anything is called: an unknown model never
	// reaches a provider, nor the agent cache (a configured provider named
	// without a model is resolved to its default by building its agent).
	if req.Provider != "" || req.Model != "" {
		provider, model, err := g.resolveModel(req.Provider, req.Model)
		if err != nil {
			writeError(w, err)
			return
		}
		if !g.modelAllowed(principal, provider, model) {
			writeError(w, errf(http.StatusBadRequest, api.CodeModelNotAllowed, "model "+strconv.Quote(provider+"/"+model)+" is not available to this principal (serve.limits models)"))
			return
		}
	}
	root, err := g.workspaceRoot(r.Context(), req.Workspace)
	if err != nil {
		writeError(w, err)
		return
	}
	a, err := g.agentFor(principal, root, req.Provider, req.Model)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := g.sessionAdded(r.Context(), principal); err != nil {
		writeError(w, err)
		return
	}
	s, err := a.NewSession(r.Context(), agent.SessionOptions{Title: req.Title, Principal: principal, SystemPromptExtra: req.SystemPromptExtra})
	if err != nil {
		g.sessionRemoved(principal)
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, g.view(s))
}

func intParam(r *http.Request, name string, def, maxV int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, errf(http.StatusBadRequest, api.CodeBadRequest, name+" must be a non-negative integer")
	}
	return min(n, maxV), nil
}

func (g *Gateway) listSessions(w http.ResponseWriter, r *http.Request) {
	limit, err := intParam(r, "limit", 50, 500)
	if err != nil {
		writeError(w, err)
		return
	}
	offset, err := intParam(r, "offset", 0, 1<<30)
	if err != nil {
		writeError(w, err)
		return
	}
	if limit == 0 {
		limit = 50
	}
	list, err := g.store.ListSessions(r.Context(), store.ListOptions{Limit: limit, Offset: offset, Principal: principalOf(r.Context())})
	if err != nil {
		writeError(w, err)
		return
	}
	out := make([]SessionView, 0, len(list))
	for i := range list {
		out = append(out, g.view(&list[i]))
	}
	resp := map[string]any{"sessions": out}
	if len(list) == limit {
		resp["next_offset"] = offset + limit
	}
	writeJSON(w, http.StatusOK, resp)
}

func (g *Gateway) getSession(w http.ResponseWriter, r *http.Request) {
	s, err := g.owned(r)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, g.view(s))
}

func (g *Gateway) usage(w http.ResponseWriter, r *http.Request) {
	s, err := g.owned(r)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"session_id": s.ID, "usage": apiview.Usage(s)})
}

func (g *Gateway) deleteSession(w http.ResponseWriter, r *http.Request) {
	s, err := g.owned(r)
	if err != nil {
		writeError(w, err)
		return
	}
	st := g.state(s.ID)
	st.mu.Lock()
	busy := st.running != nil || st.pending > 0
	st.mu.Unlock()
	if busy {
		writeError(w, errf(http.StatusConflict, api.CodeSessionBusy, "the session has a running or queued turn; interrupt it first"))
		return
	}
	if err := g.store.DeleteSession(r.Context(), s.ID); err != nil {
		writeError(w, err)
		return
	}
	g.sessionRemoved(s.Principal)
	g.hubs.drop(s.ID)
	w.WriteHeader(http.StatusNoContent)
}

func (g *Gateway) listMessages(w http.ResponseWriter, r *http.Request) {
	s, err := g.owned(r)
	if err != nil {
		writeError(w, err)
		return
	}
	rows, err := g.store.Messages(r.Context(), s.ID, store.MessageQuery{IncludeArchived: r.URL.Query().Get("all") == "true"})
	if err != nil {
		writeError(w, err)
		return
	}
	out := make([]MessageView, 0, len(rows))
	for i := range rows {
		if shown(&rows[i]) || rows[i].Archived {
			out = append(out, apiview.Message(&rows[i]))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"session_id": s.ID, "messages": out})
}

func (g *Gateway) search(w http.ResponseWriter, r *http.Request) {
	q, err := searchQuery(r.URL.Query().Get("q"))
	if err != nil {
		writeError(w, err)
		return
	}
	limit, err := intParam(r, "limit", 20, 200)
	if err != nil {
		writeError(w, err)
		return
	}
	// A search is bounded: the request's deadline ends it (the store
	// interrupts the statement when the context ends).
	ctx, cancel := context.WithTimeout(r.Context(), searchTimeout)
	defer cancel()
	r = r.WithContext(ctx)
	release, err := g.hold(principalOf(r.Context()), "searches")
	if err != nil {
		writeError(w, err)
		return
	}
	defer release()
	opt := store.SearchOptions{Limit: limit, Principal: principalOf(r.Context()), SessionID: r.URL.Query().Get("session")}
	hits, err := g.store.Search(r.Context(), q, opt)
	if err != nil {
		writeError(w, err)
		return
	}
	out := make([]api.SearchHit, 0, len(hits))
	for _, h := range hits {
		out = append(out, apiview.SearchHit(h))
	}
	writeJSON(w, http.StatusOK, map[string]any{"hits": out})
}

// Search bounds: a query longer or with more distinct words is refused
// (each word multiplies the index's work); searchTimeout ends a search
// that still runs.
const (
	maxSearchBytes = 256
	maxSearchTerms = 8
	searchTimeout  = 10 * time.Second
)

// searchQuery checks and normalises q: words separated by single spaces,
// duplicate words (case-insensitive) folded.
func searchQuery(q string) (string, error) {
	if len(q) > maxSearchBytes {
		return "", errf(http.StatusBadRequest, api.CodeBadRequest, fmt.Sprintf("q is longer than %d bytes", maxSearchBytes))
	}
	seen := map[string]bool{}
	var words []string
	for _, w := range strings.Fields(q) {
		k := strings.ToLower(w)
		if seen[k] {
			continue
		}
		seen[k] = true
		words = append(words, w)
	}
	if len(words) == 0 {
		return "", errf(http.StatusBadRequest, api.CodeBadRequest, "q is required")
	}
	if len(words) > maxSearchTerms {
		return "", errf(http.StatusBadRequest, api.CodeBadRequest, fmt.Sprintf("q has more than %d distinct words", maxSearchTerms))
	}
	return strings.Join(words, " "), nil
}

type postMessageRequest struct {
	Text string `json:"text"`
	// Busy overrides the server's busy mode for this message: "queue",
	// "interrupt", "reject" or "steer".
	Busy string `json:"busy,omitempty"`
}

func wantsStream(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

func (g *Gateway) postMessage(w http.ResponseWriter, r *http.Request) {
	var req postMessageRequest
	if err := decodeBody(w, r, g.cfg.MaxBodyBytes, &req); err != nil {
		writeError(w, err)
		return
	}
	if strings.TrimSpace(req.Text) == "" {
		writeError(w, errf(http.StatusBadRequest, api.CodeBadRequest, `"text" must not be empty`))
		return
	}
	switch req.Busy {
	case "", BusyQueue, BusyInterrupt, BusyReject, BusySteer:
	default:
		writeError(w, errf(http.StatusBadRequest, api.CodeBadRequest, `"busy" must be queue, interrupt, reject or steer`))
		return
	}
	s, err := g.owned(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if !s.Live() {
		if tip, terr := store.ResolveTip(r.Context(), g.store, s.ID); terr != nil || tip.ID == s.ID {
			writeError(w, errf(http.StatusConflict, api.CodeSessionEnded, "session "+s.ID+" has ended; start a new one"))
			return
		}
	}
	if !wantsStream(r) {
		sub, err := g.submit(r.Context(), s, principalOf(r.Context()), req.Text, req.Busy)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusAccepted, sub)
		return
	}
	// Streamed: subscribe before the turn can start so nothing is missed.
	h, release, ok := g.openSSE(w, r, s.ID)
	if !ok {
		return
	}
	defer release()
	after := h.lastID()
	sb, bl := h.subscribe(after, g.cfg.SubscriberBuffer)
	bl.covered = true // only this turn's events matter, and they are all new
	// A streamed post follows its own turn to the end: it is queued
	// rather than steered, whose turn would never start.
	busy := req.Busy
	if busy == BusySteer || (busy == "" && g.cfg.Busy == BusySteer) {
		busy = BusyQueue
	}
	res, err := g.submit(r.Context(), s, principalOf(r.Context()), req.Text, busy)
	if err != nil {
		h.unsubscribe(sb)
		writeError(w, err)
		return
	}
	w.Header().Set("X-Turn-ID", res.TurnID)
	g.stream(r.Context(), w, s.ID, streamOptions{after: after, turnID: res.TurnID}, sb, h, bl)
}

func (g *Gateway) events(w http.ResponseWriter, r *http.Request) {
	s, err := g.owned(r)
	if err != nil {
		writeError(w, err)
		return
	}
	after, err := lastEventID(r)
	if err != nil {
		writeError(w, err)
		return
	}
	h, release, ok := g.openSSE(w, r, s.ID)
	if !ok {
		return
	}
	defer release()
	sb, bl := h.subscribe(after, g.cfg.SubscriberBuffer)
	g.stream(r.Context(), w, s.ID, streamOptions{after: after}, sb, h, bl)
}

// openSSE is openStream for an event stream that answers r. The body is
// read, so the stream may outlive the read deadline. A failure is answered
// here: ok is false then.
func (g *Gateway) openSSE(w http.ResponseWriter, r *http.Request, id string) (_ *hub, release func(), ok bool) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	h, release, err := g.openStream(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return nil, nil, false
	}
	return h, release, true
}

// openStream finds session id's hub and holds one of the caller's streams
// (serve.limits counts every open stream), which release gives back.
func (g *Gateway) openStream(ctx context.Context, id string) (_ *hub, release func(), err error) {
	h, err := g.hubs.get(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	release, err = g.hold(principalOf(ctx), "streams")
	if err != nil {
		return nil, nil, err
	}
	return h, release, nil
}

func (g *Gateway) interruptTurn(w http.ResponseWriter, r *http.Request) {
	state, err := g.interrupt(r.Context(), r.PathValue("id"), principalOf(r.Context()))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"turn_id": r.PathValue("id"), "state": state})
}

func (g *Gateway) approve(w http.ResponseWriter, r *http.Request) {
	var req api.ApprovalAnswer
	if err := decodeBody(w, r, g.cfg.MaxBodyBytes, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := g.answer(r.Context(), r.PathValue("id"), r.PathValue("call"), principalOf(r.Context()), req); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"turn_id": r.PathValue("id"), "call_id": r.PathValue("call"), "decision": req.Decision})
}

// explainRequest mirrors the explain-error command's flags.
type explainRequest struct {
	Provider      string            `json:"provider"`
	Model         string            `json:"model"`
	API           string            `json:"api"`
	BaseURL       string            `json:"base_url"`
	Status        int               `json:"status"`
	Headers       map[string]string `json:"headers"`
	Body          string            `json:"body"`
	Message       string            `json:"message"`
	Transport     string            `json:"transport"`
	MidStream     bool              `json:"mid_stream"`
	ContextTokens int               `json:"context_tokens"`
	ContextWindow int               `json:"context_window"`
	MessageCount  int               `json:"messages"`
}

func (g *Gateway) explainError(w http.ResponseWriter, r *http.Request) {
	var req explainRequest
	if err := decodeBody(w, r, g.cfg.MaxBodyBytes, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Provider == "" {
		writeError(w, errf(http.StatusBadRequest, api.CodeBadRequest, `"provider" is required`))
		return
	}
	c, err := explain(req)
	if err != nil {
		writeError(w, errf(http.StatusBadRequest, api.CodeBadRequest, err.Error()))
		return
	}
	writeJSON(w, http.StatusOK, c)
}
