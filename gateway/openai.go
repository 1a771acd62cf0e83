package gateway

// OpenAI-compatible routes: POST /v1/chat/completions, POST /v1/responses
// (openai_responses.go) and GET /v1/models. Each request runs one durable
// Talaria turn through the same queue, tokens, principals, limits,
// allow-lists and sandbox as POST /v1/sessions/{id}/messages; only the
// wire shapes differ.
//
// Sessions: the X-Talaria-Session request header names the session the
// turn runs in (another principal's is 404); without it every request
// starts a new session. The response's X-Talaria-Session header names the
// session used and X-Talaria-Turn the turn.
//
// What is returned: the assistant's text only. Tools Talaria runs itself
// are not echoed as OpenAI tool calls (the client did not offer them and
// must not run them); they are in the session's transcript and events on
// the native API. Client-side tools ("tools", tool messages) are refused.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// SessionHeader names the Talaria session of an OpenAI-compatible request
// and, in the answer, the session it ran in.
const SessionHeader = "X-Talaria-Session"

// TurnHeader names the turn an OpenAI-compatible request ran.
const TurnHeader = "X-Talaria-Turn"

// openAIRoutes lists the OpenAI-compatible routes.
func (g *Gateway) openAIRoutes() []route {
	return []route{
		{"GET /v1/models", g.oaiAuthed(g.oaiModels)},
		{"POST /v1/chat/completions", g.oaiAuthed(g.chatCompletions)},
		{"POST /v1/responses", g.oaiAuthed(g.responses)},
	}
}

// oaiError is OpenAI's error body: {"error": {message, type, param, code}}.
type oaiError struct {
	Status  int     `json:"-"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
	// retry: false tells the official clients not to retry (a turn
	// that ran and failed must not run again by itself).
	noRetry bool
}

func (e *oaiError) Error() string { return e.Type + ": " + e.Message }

// strp is s as an optional JSON string (nil when empty); it takes the
// native error codes as they are.
func strp[S ~string](s S) *string {
	if s == "" {
		return nil
	}
	v := string(s)
	return &v
}

// badParam is a 400 about one request parameter.
func badParam(param, code, msg string) *oaiError {
	return &oaiError{Status: http.StatusBadRequest, Message: msg, Type: "invalid_request_error", Param: strp(param), Code: strp(code)}
}

// toOAI maps any error of the gateway to OpenAI's shape; the native
// error code stays the code, except where OpenAI's clients know one.
func toOAI(err error) *oaiError {
	var oe *oaiError
	if errors.As(err, &oe) {
		return oe
	}
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = storeError(err)
	}
	e := &oaiError{Status: ae.Status, Message: ae.Message, Type: "invalid_request_error", Code: strp(ae.Code)}
	switch {
	case ae.Status == http.StatusUnauthorized:
		e.Code = strp("invalid_api_key")
	case ae.Status == http.StatusTooManyRequests:
		e.Type = "requests"
		if ae.Code == api.CodeRateLimited || ae.Code == api.CodeTooManyFailures {
			e.Code = strp("rate_limit_exceeded")
		}
	case ae.Status >= 500:
		e.Type = "server_error"
	}
	return e
}

func writeOAIError(w http.ResponseWriter, err error) {
	e := toOAI(err)
	if e.Status == http.StatusUnauthorized || e.Status == http.StatusRequestEntityTooLarge {
		w.Header().Set("Connection", "close")
	}
	if e.noRetry {
		w.Header().Set("X-Should-Retry", "false")
	}
	writeJSON(w, e.Status, map[string]any{"error": e})
}

// oaiAuthed is authed and rateLimited with OpenAI's error shape.
func (g *Gateway) oaiAuthed(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, ok := g.authCaller(w, r, writeOAIError)
		if !ok {
			return
		}
		ok, wait := g.allowRequest(c.principal)
		if !ok {
			g.m.principalRequest(c.principal, "limited")
			w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
			writeOAIError(w, errf(http.StatusTooManyRequests, api.CodeRateLimited, "too many requests for this principal; slow down"))
			return
		}
		g.m.principalRequest(c.principal, "ok")
		next(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	}
}

// oaiDecode reads a JSON body; unknown fields are allowed (the clients send
// sampling options Talaria's turn does not take).
func oaiDecode(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &oaiError{Status: http.StatusRequestEntityTooLarge, Message: "the request body is larger than the limit", Type: "invalid_request_error", Code: strp(api.CodeBodyTooLarge)}
		}
		return badParam("", string(api.CodeInvalidJSON), "the body is not valid JSON: "+err.Error())
	}
	return nil
}

// oaiModel is one entry of GET /v1/models.
type oaiModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// modelsFor lists the "provider/model" ids principal may use: the
// configured routes it is allowed, then the literal entries (no pattern)
// of its allow-list.
func (g *Gateway) modelsFor(principal string) []oaiModel {
	seen := map[string]bool{}
	var out []oaiModel
	add := func(provider, model string) {
		id := provider + "/" + model
		if seen[id] || provider == "" || model == "" || !g.modelAllowed(principal, provider, model) {
			return
		}
		seen[id] = true
		out = append(out, oaiModel{ID: id, Object: "model", OwnedBy: provider})
	}
	for _, r := range g.routes {
		add(r.Provider.Name(), r.Model)
	}
	for _, p := range g.limitFor(principal).Models {
		if strings.ContainsAny(p, "*?[\\") {
			continue
		}
		if provider, model, ok := strings.Cut(p, "/"); ok {
			add(provider, model)
		}
	}
	return out
}

func (g *Gateway) oaiModels(w http.ResponseWriter, r *http.Request) {
	list := g.modelsFor(principalOf(r.Context()))
	if list == nil {
		list = []oaiModel{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": list})
}

// resolveOAIModel maps a request's "model" to a provider and model the
// principal may use: "provider/model", a bare model name of a configured
// route, or a model of the primary provider. "" is the server's default.
func (g *Gateway) resolveOAIModel(principal, name string) (provider, model string, err error) {
	if name == "" {
		return g.resolveModel("", "")
	}
	if p, m, ok := strings.Cut(name, "/"); ok && g.modelAllowed(principal, p, m) {
		return p, m, nil
	}
	for _, r := range g.routes {
		if r.Model == name && g.modelAllowed(principal, r.Provider.Name(), r.Model) {
			return r.Provider.Name(), r.Model, nil
		}
	}
	if p := g.routes[0].Provider.Name(); g.modelAllowed(principal, p, name) {
		return p, name, nil
	}
	return "", "", &oaiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: strp("model"), Code: strp("model_not_found"),
		Message: "the model " + strconv.Quote(name) + " does not exist or is not available to this principal (GET /v1/models lists them)"}
}

// oaiTurnRequest is what both endpoints hand to runOAITurn.
type oaiTurnRequest struct {
	model     string // as the client named it
	sessionID string // from the header or previous_response_id; "" for a new session
	system    string // system/developer text, for a new session's prompt
	history   []oaiMsg
	stream    bool
}

// oaiMsg is one text message of the client's conversation.
type oaiMsg struct {
	role string // "user", "assistant", "system" or "developer"
	text string
}

// turnText splits the client's conversation: the trailing user messages
// are the turn's text; for a new session the earlier messages are quoted
// before it (an existing session has its own history).
func turnText(history []oaiMsg, newSession bool) (string, error) {
	i := len(history)
	for i > 0 && history[i-1].role == "user" {
		i--
	}
	var last []string
	for _, m := range history[i:] {
		if strings.TrimSpace(m.text) != "" {
			last = append(last, m.text)
		}
	}
	if len(last) == 0 {
		return "", badParam("messages", "", "the conversation must end with a user message that has text")
	}
	text := strings.Join(last, "\n\n")
	if !newSession {
		return text, nil
	}
	var earlier []string
	for _, m := range history[:i] {
		if m.role == "user" || m.role == "assistant" {
			earlier = append(earlier, m.role+": "+m.text)
		}
	}
	if len(earlier) == 0 {
		return text, nil
	}
	return "The conversation so far (sent by the client):\n\n" + strings.Join(earlier, "\n\n") + "\n\nThe new message:\n\n" + text, nil
}

// oaiSession loads the session a request names (404 unless the caller
// owns it, as on the native API) or creates one on the requested model.
func (g *Gateway) oaiSession(ctx context.Context, req *oaiTurnRequest) (sess *store.Session, created bool, err error) {
	principal := principalOf(ctx)
	if req.sessionID != "" {
		s, err := g.store.GetSession(ctx, req.sessionID)
		if errors.Is(err, store.ErrNotFound) || err == nil && s.Principal != principal {
			return nil, false, &oaiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: strp(api.CodeNotFound),
				Message: "no session " + req.sessionID}
		}
		if err != nil {
			return nil, false, err
		}
		if !s.Live() {
			if tip, terr := store.ResolveTip(ctx, g.store, s.ID); terr != nil || tip.ID == s.ID {
				return nil, false, &oaiError{Status: http.StatusConflict, Type: "invalid_request_error", Code: strp(api.CodeSessionEnded),
					Message: "session " + s.ID + " has ended; send the request without " + SessionHeader + " to start a new one"}
			}
		}
		if req.model != "" {
			p, m, err := g.resolveOAIModel(principal, req.model)
			if err != nil {
				return nil, false, err
			}
			sp, sm, _ := g.resolveModel(s.Provider, s.Model)
			if p != sp || m != sm {
				return nil, false, badParam("model", "model_mismatch", "session "+s.ID+" runs on "+sp+"/"+sm+"; a session keeps its model (send that one, or none)")
			}
		}
		return s, false, nil
	}
	provider, model, err := g.resolveOAIModel(principal, req.model)
	if err != nil {
		return nil, false, err
	}
	root, err := g.workspaceRoot(ctx, "")
	if err != nil {
		return nil, false, err
	}
	a, err := g.agentFor(principal, root, provider, model)
	if err != nil {
		return nil, false, err
	}
	if err := g.sessionAdded(ctx, principal); err != nil {
		return nil, false, err
	}
	s, err := a.NewSession(ctx, agent.SessionOptions{Title: "openai: " + clip(req.history), Principal: principal, SystemPromptExtra: req.system})
	if err != nil {
		g.sessionRemoved(principal)
		return nil, false, err
	}
	return s, true, nil
}

// clip titles a new session after the last user message.
func clip(history []oaiMsg) string {
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].role == "user" {
			t := strings.Join(strings.Fields(history[i].text), " ")
			if len(t) > 60 {
				t = strings.ToValidUTF8(t[:60], "") + "…"
			}
			return t
		}
	}
	return ""
}

// turnEvent is the part of an event's JSON a follower reads.
type turnEvent struct {
	Text   string       `json:"text"`
	Result *turn.Result `json:"result"`
}

// follower receives one turn's events, in order.
type follower interface {
	// started is called once the turn is queued (its id known).
	started(turnID string)
	// event is each event of the turn but turn_finished.
	event(typ EventType, ev turnEvent)
	// beat is called every heartbeat while the turn runs; false ends
	// the request (and interrupts the turn).
	beat() bool
}

// errClientGone ends a followed turn whose client went away.
var errClientGone = errors.New("the client closed the request")

// followTurn queues text as a turn of sess and follows it to its end,
// returning its result. A client that goes away (ctx ends) or a beat
// that fails interrupts the turn: an OpenAI client's request is the turn.
func (g *Gateway) followTurn(ctx context.Context, sess *store.Session, text string, f follower) (turn.Result, error) {
	principal := principalOf(ctx)
	h, release, err := g.openStream(ctx, sess.ID)
	if err != nil {
		return turn.Result{}, err
	}
	defer release()
	last := h.lastID()
	sb, bl := h.subscribe(last, g.cfg.SubscriberBuffer)
	defer func() { h.unsubscribe(sb) }()
	bl.covered = true
	busy := g.cfg.Busy
	if busy == BusySteer {
		busy = BusyQueue // the request follows its own turn to its end
	}
	sub, err := g.submit(ctx, sess, principal, text, busy)
	if err != nil {
		return turn.Result{}, err
	}
	f.started(sub.TurnID)
	g.m.streams(1)
	defer g.m.streams(-1)
	// handle returns the result once ev is the turn's turn_finished.
	handle := func(ev Event) (*turn.Result, bool) {
		if ev.ID <= last {
			return nil, false
		}
		last = ev.ID
		if ev.TurnID != sub.TurnID {
			return nil, false
		}
		var te turnEvent
		if err := json.Unmarshal(ev.Data, &te); err != nil {
			return nil, false
		}
		if ev.Type == api.EventTurnFinished {
			if te.Result == nil {
				te.Result = &turn.Result{SessionID: sess.ID, TurnID: sub.TurnID, Exit: turn.ExitFailed}
			}
			return te.Result, true
		}
		f.event(ev.Type, te)
		return nil, false
	}
	for _, ev := range bl.events {
		if res, done := handle(ev); done {
			return *res, nil
		}
	}
	gone := func(cause error) (turn.Result, error) {
		ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := g.interrupt(ictx, sub.TurnID, principal); err != nil {
			g.log.Warn("openai: could not interrupt the turn of a request that ended", "turn", sub.TurnID, "error", err)
		}
		return turn.Result{}, cause
	}
	beat := time.NewTicker(g.cfg.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return gone(errClientGone)
		case <-g.closing:
			for {
				select {
				case ev := <-sb.ch:
					if res, done := handle(ev); done {
						return *res, nil
					}
				default:
					return turn.Result{}, errf(http.StatusServiceUnavailable, api.CodeShuttingDown, "the server shut down before the turn ended")
				}
			}
		case <-sb.dropped:
			// Fell behind (a very slow client): follow on from the ring.
			h.unsubscribe(sb)
			sb, bl = h.subscribe(last, g.cfg.SubscriberBuffer)
			for _, ev := range bl.events {
				if res, done := handle(ev); done {
					return *res, nil
				}
			}
		case <-beat.C:
			if !g.tokenValid(ctx) || !f.beat() {
				return gone(errClientGone)
			}
		case ev := <-sb.ch:
			if res, done := handle(ev); done {
				return *res, nil
			}
		}
	}
}

// failedTurn is the error answer of a turn that did not complete: the
// status says why; the official clients are told not to retry, since the
// turn ran (its message is in the session).
func failedTurn(res turn.Result) *oaiError {
	msg := res.Explanation
	if msg == "" && res.Failure != nil {
		msg = res.Failure.Message
	}
	if msg == "" {
		msg = "the turn ended: " + string(res.Exit)
	}
	e := &oaiError{Status: http.StatusBadGateway, Message: msg, Type: "server_error", Code: strp(string(res.Exit)), noRetry: true}
	switch res.Exit {
	case turn.ExitSpendLimit:
		e.Status, e.Type, e.Code = http.StatusTooManyRequests, "insufficient_quota", strp("insufficient_quota")
	case turn.ExitBusy:
		e.Status, e.Type, e.Code = http.StatusConflict, "invalid_request_error", strp(api.CodeSessionBusy)
	case turn.ExitFailed:
		if res.Failure != nil {
			e.Code = strp(string(res.Failure.Class))
		}
	case turn.ExitPanic, turn.ExitPersistenceFailed, turn.ExitCompressionFailed, turn.ExitCompressionExhausted, turn.ExitLeaseLost:
		e.Status = http.StatusInternalServerError
	}
	return e
}

// answered reports whether a turn's result is an answer (200) rather
// than an error: it completed, or stopped with text to show.
func answered(res turn.Result) bool {
	switch res.Exit {
	case turn.ExitCompleted, turn.ExitBudgetExhausted:
		return true
	case turn.ExitInterrupted, turn.ExitToolLoop:
		return res.FinalText != ""
	}
	return false
}

// oaiUsage is the turn's usage, its subagents' included: what the request
// cost.
func oaiUsage(res turn.Result) llm.Usage {
	u := res.Usage
	if s := res.Subagents; s != nil {
		u.InputTokens += s.Usage.InputTokens
		u.OutputTokens += s.Usage.OutputTokens
		u.CacheReadTokens += s.Usage.CacheReadTokens
		u.CacheWriteTokens += s.Usage.CacheWriteTokens
		u.ReasoningTokens += s.Usage.ReasoningTokens
	}
	return u
}

// talariaInfo is the extension object answers carry under "talaria".
type talariaInfo struct {
	SessionID  string  `json:"session_id"`
	TurnID     string  `json:"turn_id"`
	Exit       string  `json:"exit"`
	CostUSD    float64 `json:"cost_usd"`
	ToolCalls  int     `json:"tool_calls"`
	NewSession bool    `json:"new_session,omitempty"`
}

func infoOf(res turn.Result, created bool) talariaInfo {
	return talariaInfo{SessionID: res.SessionID, TurnID: res.TurnID, Exit: string(res.Exit), CostUSD: res.TotalCostUSD(), ToolCalls: res.ToolCalls, NewSession: created}
}

// oaiStream is an SSE answer whose headers wait for the first output, so
// a turn that fails before it (spend limit, busy) still gets its status.
type oaiStream struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	on  bool
	err error
}

func newOAIStream(w http.ResponseWriter) *oaiStream {
	return &oaiStream{w: w, rc: http.NewResponseController(w)}
}

// start sends the headers once.
func (s *oaiStream) start() {
	if s.on {
		return
	}
	s.on = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
}

// send writes one data event (with an event name when typ is set).
func (s *oaiStream) send(typ string, v any) {
	if s.err != nil {
		return
	}
	s.start()
	b, err := json.Marshal(v)
	if err != nil {
		s.err = err
		return
	}
	if typ != "" {
		_, s.err = fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", typ, b)
	} else {
		_, s.err = fmt.Fprintf(s.w, "data: %s\n\n", b)
	}
	if s.err == nil {
		s.err = s.rc.Flush()
	}
}

// raw writes a line as is ("data: [DONE]", ": ping").
func (s *oaiStream) raw(line string) bool {
	if s.err != nil {
		return false
	}
	s.start()
	if _, s.err = fmt.Fprintf(s.w, "%s\n\n", line); s.err == nil {
		s.err = s.rc.Flush()
	}
	return s.err == nil
}

// textJoin puts a blank line between the text of two model calls with a
// tool round between them, so streamed text does not run together.
type textJoin struct {
	any, gap bool
}

func (j *textJoin) delta(s string) string {
	if s == "" {
		return ""
	}
	if j.gap && j.any {
		s = "\n\n" + s
	}
	j.any, j.gap = true, false
	return s
}

func (j *textJoin) tool() { j.gap = true }

// event follows a turn's event for an OpenAI stream: its text goes to
// text, joined; anything else that shows the turn under way calls begin,
// so the stream (and its headers) goes out.
func (j *textJoin) event(typ EventType, ev turnEvent, begin func(), text func(string)) {
	switch typ {
	case api.EventTextDelta:
		if s := j.delta(ev.Text); s != "" {
			text(s)
		}
	case api.EventToolStarted:
		j.tool()
		begin()
	case api.EventReasoningDelta, api.EventApprovalRequired, api.EventSubagentStarted:
		begin()
	}
}

// chatRequest is the part of a chat completions request Talaria reads.
type chatRequest struct {
	Model         string            `json:"model"`
	Messages      []json.RawMessage `json:"messages"`
	Stream        bool              `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Tools     []json.RawMessage `json:"tools"`
	Functions []json.RawMessage `json:"functions"`
	N         *int              `json:"n"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// contentText reads a message's content: a string or text parts.
func contentText(raw json.RawMessage, param string) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badParam(param, "", "content must be a string or an array of text parts")
	}
	var b strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text", "input_text", "output_text":
			b.WriteString(p.Text)
		default:
			return "", badParam(param, "unsupported_content", "content part type "+strconv.Quote(p.Type)+" is not supported; send text")
		}
	}
	return b.String(), nil
}

func (req *chatRequest) conversation() ([]oaiMsg, string, error) {
	if len(req.Tools) > 0 || len(req.Functions) > 0 {
		return nil, "", badParam("tools", "unsupported_parameter", "client-side tools are not supported: Talaria runs its own tools and returns the answer")
	}
	if req.N != nil && *req.N != 1 {
		return nil, "", badParam("n", "unsupported_parameter", "n must be 1")
	}
	if len(req.Messages) == 0 {
		return nil, "", badParam("messages", "", "messages must not be empty")
	}
	var history []oaiMsg
	var system []string
	for i, raw := range req.Messages {
		param := fmt.Sprintf("messages[%d]", i)
		var m chatMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, "", badParam(param, "", "a message must be an object with a role and content")
		}
		text, err := contentText(m.Content, param+".content")
		if err != nil {
			return nil, "", err
		}
		switch m.Role {
		case "system", "developer":
			system = append(system, text)
		case "user", "assistant":
			history = append(history, oaiMsg{role: m.Role, text: text})
		default:
			return nil, "", badParam(param+".role", "unsupported_role", "role "+strconv.Quote(m.Role)+" is not supported: Talaria runs its own tools")
		}
	}
	return history, strings.Join(system, "\n\n"), nil
}

// modelID is how answers name a session's model.
func (g *Gateway) modelID(s *store.Session) string {
	p, m, _ := g.resolveModel(s.Provider, s.Model)
	return p + "/" + m
}

func (g *Gateway) chatCompletions(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	history, system, ok := g.oaiConversation(w, r, &req)
	if !ok {
		return
	}
	tr := &oaiTurnRequest{model: req.Model, sessionID: strings.TrimSpace(r.Header.Get(SessionHeader)), system: system, history: history, stream: req.Stream}
	sess, created, text, err := g.oaiPrepare(r.Context(), tr)
	if err != nil {
		writeOAIError(w, err)
		return
	}
	w.Header().Set(SessionHeader, sess.ID)
	model := g.modelID(sess)
	now := g.cfg.Now().Unix()
	if !req.Stream {
		f := &collectFollower{w: w}
		res, err := g.followAnswer(r.Context(), sess, text, f)
		if err != nil {
			writeOAIError(w, err)
			return
		}
		u := oaiUsage(res)
		writeJSON(w, http.StatusOK, map[string]any{
			"id": "chatcmpl-" + res.TurnID, "object": "chat.completion", "created": now, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": res.FinalText, "refusal": nil},
				"finish_reason": finishReason(res), "logprobs": nil}},
			"usage":   chatUsage(u),
			"talaria": infoOf(res, created),
		})
		return
	}
	s := newOAIStream(w)
	f := &chatFollower{s: s, now: now, model: model}
	res, ok := g.streamAnswer(r.Context(), s, sess, text, f, func(err error) {
		s.send("", map[string]any{"error": toOAI(err)})
	})
	if !ok {
		return
	}
	if !f.any && res.FinalText != "" {
		f.content(res.FinalText) // an answer that streamed no delta
	}
	f.role()
	s.send("", map[string]any{"id": f.id, "object": "chat.completion.chunk", "created": now, "model": model,
		"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finishReason(res), "logprobs": nil}},
		"talaria": infoOf(res, created)})
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		s.send("", map[string]any{"id": f.id, "object": "chat.completion.chunk", "created": now, "model": model,
			"choices": []any{}, "usage": chatUsage(oaiUsage(res))})
	}
	s.raw("data: [DONE]")
}

// oaiConversation decodes the body into req and returns its conversation.
// A bad request is answered here: ok is false then.
func (g *Gateway) oaiConversation(w http.ResponseWriter, r *http.Request, req interface {
	conversation() ([]oaiMsg, string, error)
}) (history []oaiMsg, system string, ok bool) {
	err := oaiDecode(w, r, g.cfg.MaxBodyBytes, req)
	if err == nil {
		history, system, err = req.conversation()
	}
	if err != nil {
		writeOAIError(w, err)
		return nil, "", false
	}
	return history, system, true
}

// followAnswer is followTurn for an OpenAI client, which has nothing to
// show for a turn that ended without an answer: that is an error too.
func (g *Gateway) followAnswer(ctx context.Context, sess *store.Session, text string, f follower) (turn.Result, error) {
	res, err := g.followTurn(ctx, sess, text, f)
	if err == nil && !answered(res) {
		err = failedTurn(res)
	}
	return res, err
}

// streamAnswer is followAnswer for a streamed request, whose answer goes
// out on s. The body is read, so the stream may outlive the read deadline.
// ok is false when the request is over: the client went away, or the turn
// failed, which is an OpenAI error before the stream began and failed's
// event on it after.
func (g *Gateway) streamAnswer(ctx context.Context, s *oaiStream, sess *store.Session, text string, f follower, failed func(error)) (res turn.Result, ok bool) {
	_ = s.rc.SetReadDeadline(time.Time{})
	res, err := g.followAnswer(ctx, sess, text, f)
	switch {
	case errors.Is(err, errClientGone):
		return res, false
	case err != nil && !s.on:
		writeOAIError(s.w, err)
		return res, false
	case err != nil:
		failed(err)
		return res, false
	}
	return res, true
}

// oaiPrepare finds or makes the session and the turn's text.
func (g *Gateway) oaiPrepare(ctx context.Context, tr *oaiTurnRequest) (*store.Session, bool, string, error) {
	// The text is checked before a session is made for it.
	if _, err := turnText(tr.history, true); err != nil {
		return nil, false, "", err
	}
	sess, created, err := g.oaiSession(ctx, tr)
	if err != nil {
		return nil, false, "", err
	}
	text, err := turnText(tr.history, created)
	return sess, created, text, err
}

func finishReason(res turn.Result) string {
	if res.Truncated {
		return "length"
	}
	return "stop"
}

func chatUsage(u llm.Usage) map[string]any {
	return map[string]any{
		"prompt_tokens": u.PromptTokens(), "completion_tokens": u.OutputTokens, "total_tokens": u.PromptTokens() + u.OutputTokens,
		"prompt_tokens_details":     map[string]any{"cached_tokens": u.CacheReadTokens},
		"completion_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
	}
}

// collectFollower follows a non-streamed request: nothing is sent before
// the answer, so the session and turn go in its headers.
type collectFollower struct{ w http.ResponseWriter }

func (c *collectFollower) started(turnID string)      { c.w.Header().Set(TurnHeader, turnID) }
func (c *collectFollower) event(EventType, turnEvent) {}
func (c *collectFollower) beat() bool                 { return true }

// chatFollower streams a turn's text as chat.completion.chunk events.
type chatFollower struct {
	s      *oaiStream
	now    int64
	model  string
	id     string
	join   textJoin
	any    bool
	sentUp bool // the role chunk is out
}

func (c *chatFollower) started(turnID string) {
	c.id = "chatcmpl-" + turnID
	c.s.w.Header().Set(TurnHeader, turnID)
}

func (c *chatFollower) chunk(delta map[string]any) {
	c.s.send("", map[string]any{"id": c.id, "object": "chat.completion.chunk", "created": c.now, "model": c.model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": nil, "logprobs": nil}}})
}

// role sends the first chunk, which names the role.
func (c *chatFollower) role() {
	if !c.sentUp {
		c.sentUp = true
		c.chunk(map[string]any{"role": "assistant", "content": ""})
	}
}

func (c *chatFollower) content(s string) {
	c.role()
	c.any = true
	c.chunk(map[string]any{"content": s})
}

func (c *chatFollower) event(typ EventType, ev turnEvent) {
	c.join.event(typ, ev, c.role, c.content)
}

func (c *chatFollower) beat() bool {
	c.role()
	return c.s.raw(": ping")
}
