package fakellm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// wireFormat renders replies in one API's wire format.
type wireFormat interface {
	requestIDHeader() string
	// errorJSON is the JSON error body shaped from e's Type, Message and
	// Code (errorBody sends e.Body instead, when set).
	errorJSON(e *ErrorReply, requestID string) []byte
	// errorEvent is an in-stream error event.
	errorEvent(e *ErrorReply, requestID string) []byte
	// message is the complete non-streaming reply.
	message(r *reply) []byte
	// events are the SSE events of a streamed reply; events[cut:] are the
	// ones that finish it, left out when a stream breaks off.
	events(r *reply) (events [][]byte, cut int)
}

// route is one API endpoint.
type route struct {
	api   string
	wire  wireFormat
	parse func(*Request) *ErrorReply
	// idPrefix and callPrefix shape generated message and tool call ids.
	idPrefix, callPrefix string
}

// routeFor finds the endpoint served at path.
func routeFor(path string) (route, bool) {
	switch path {
	case "/v1/chat/completions":
		return route{api: APIOpenAI, wire: openaiWire{}, parse: parseOpenAI, idPrefix: "chatcmpl-fake", callPrefix: "call_"}, true
	case "/v1/responses":
		return route{api: APIResponses, wire: responsesWire{}, parse: parseResponses, idPrefix: "resp_fake", callPrefix: "call_"}, true
	case "/v1/messages":
		return route{api: APIAnthropic, wire: anthropicWire{}, parse: parseAnthropic, idPrefix: "msg_fake", callPrefix: "toolu_"}, true
	}
	if model, method := gmModelOf(path); model != "" && (method == "streamGenerateContent" || method == "generateContent") {
		return route{api: APIGemini, wire: geminiWire{}, parse: parseGemini, idPrefix: "gm_fake", callPrefix: "gmcall_"}, true
	}
	return route{}, false
}

// maxBody bounds what one request may send; far above any test's needs.
const maxBody = 256 << 20

// ServeHTTP answers one API request from the script.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.enter() {
		http.Error(w, "fakellm: server closed", http.StatusServiceUnavailable)
		return
	}
	defer s.leave()
	log := s.opts.logger
	rt, ok := routeFor(r.URL.Path)
	if !ok {
		log.Warn("fakellm: unknown route", "method", r.Method, "path", r.URL.Path)
		s.writeError(w, openaiWire{}, &ErrorReply{
			Status: http.StatusNotFound, Type: "invalid_request_error", Code: "unknown_url",
			Message: fmt.Sprintf("Unknown request URL: %s %s. Please check the URL for typos.", r.Method, r.URL.Path),
		}, s.newID("req_fake"))
		return
	}
	if r.Method != http.MethodPost {
		s.writeError(w, rt.wire, &ErrorReply{
			Status: http.StatusMethodNotAllowed, Type: "invalid_request_error",
			Message: fmt.Sprintf("Method %s not allowed on %s", r.Method, r.URL.Path),
		}, s.newID("req_fake"))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		log.Debug("fakellm: reading request body", "err", err)
		return
	}
	req := Request{API: rt.api, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, epoch: s.epoch(), noContextManagement: s.opts.noContextManagement}
	bad := rt.parse(&req)
	idx, st, ok, def := s.record(req, bad != nil && s.opts.strict)
	log.Debug("fakellm: request", "index", idx, "api", rt.api, "model", req.Model, "stream", req.Stream, "messages", len(req.Messages))
	requestID := s.newID("req_fake")
	if bad != nil && s.opts.strict {
		log.Warn("fakellm: request rejected", "index", idx, "api", rt.api, "reason", bad.Message, "body", logValue(body))
		s.violate(idx, rt.api, bad.Message)
		s.writeError(w, rt.wire, bad, requestID)
		return
	}
	if !ok && def != nil {
		// Called without the lock: the function may well ask the server things.
		st, ok = def(req.clone()), true
	}
	if !ok {
		log.Warn("fakellm: no scripted reply", "index", idx, "model", req.Model)
		s.writeError(w, rt.wire, &ErrorReply{
			Status: http.StatusInternalServerError, Type: "api_error",
			Message: fmt.Sprintf("fakellm: no scripted reply left for request %d (model %q)", idx, req.Model),
		}, requestID)
		return
	}
	st = computed(st, req)
	latency := s.opts.latency
	if st.Latency > 0 {
		latency = st.Latency
	}
	if !s.sleep(r.Context().Done(), latency) {
		// Returning would send an empty 200; a dead line is the truth.
		s.cut(w)
		return
	}
	switch {
	case st.Hangup:
		s.cut(w)
	case st.Error != nil:
		s.writeError(w, rt.wire, st.Error, requestID)
	case !req.Stream && st.StreamError != nil:
		// Without a stream there is nowhere to put an in-stream error; the
		// closest real answer is the same error as an HTTP status.
		s.writeError(w, rt.wire, st.StreamError, requestID)
	case !req.Stream:
		s.writeMessage(w, rt, s.resolve(rt, req, st, requestID), st)
	default:
		s.writeStream(w, r, rt, s.resolve(rt, req, st, requestID), st)
	}
}

// computed runs a step's Respond, once.
func computed(st Step, req Request) Step {
	if st.Respond == nil {
		return st
	}
	c := st.Respond(req.clone())
	c.Respond = nil
	if c.Latency == 0 {
		c.Latency = st.Latency
	}
	if c.ChunkDelay == 0 {
		c.ChunkDelay = st.ChunkDelay
	}
	return c
}

// resolve turns a successful step into a reply for req.
func (s *Server) resolve(rt route, req Request, st Step, requestID string) *reply {
	model := req.Model
	if st.Model != "" {
		model = st.Model
	}
	if model == "" {
		model = "fakellm"
	}
	calls := slices.Clone(st.Calls) // generated ids must not write into the script
	for i := range calls {
		if calls[i].ID == "" {
			calls[i].ID = s.newID(rt.callPrefix)
		}
	}
	return &reply{
		id:           s.newID(rt.idPrefix),
		epoch:        req.epoch,
		compact:      st.Compact,
		requestID:    requestID,
		model:        model,
		created:      time.Now().Unix(),
		text:         st.Text,
		reasoning:    st.Reasoning,
		calls:        calls,
		finish:       neutralFinish(st),
		usage:        resolveUsage(req, st),
		includeUsage: req.IncludeUsage,
	}
}

// errorBody is the error body of e in w's format: e.Body verbatim when
// set, whatever the API, else the body w shapes.
func errorBody(w wireFormat, e *ErrorReply, requestID string) []byte {
	if e.Body != "" {
		return []byte(e.Body)
	}
	return w.errorJSON(e, requestID)
}

func (s *Server) writeError(w http.ResponseWriter, wire wireFormat, e *ErrorReply, requestID string) {
	body := errorBody(wire, e, requestID)
	h := w.Header()
	if e.Body == "" || json.Valid([]byte(e.Body)) {
		h.Set("Content-Type", "application/json")
	} else {
		h.Set("Content-Type", "text/plain; charset=utf-8")
	}
	h.Set(wire.requestIDHeader(), requestID)
	for k, v := range e.Header {
		h.Set(k, v)
	}
	status := e.Status
	if status == 0 {
		status = http.StatusInternalServerError
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (s *Server) successHeaders(w http.ResponseWriter, rt route, rep *reply, st Step, contentType string) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set(rt.wire.requestIDHeader(), rep.requestID)
	for k, v := range st.Header {
		h.Set(k, v)
	}
}

func (s *Server) writeMessage(w http.ResponseWriter, rt route, rep *reply, st Step) {
	body := rt.wire.message(rep)
	s.successHeaders(w, rt, rep, st, "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if !st.Drop {
		_, _ = w.Write(body)
		return
	}
	// Half the promised bytes, then the connection dies.
	_, _ = w.Write(body[:len(body)/2])
	s.cut(w)
}

func (s *Server) writeStream(w http.ResponseWriter, r *http.Request, rt route, rep *reply, st Step) {
	events, cut := rt.wire.events(rep)
	if st.Drop || st.StreamError != nil {
		events = events[:cut]
	}
	if st.StreamError != nil {
		events = append(events, rt.wire.errorEvent(st.StreamError, rep.requestID))
	}
	s.successHeaders(w, rt, rep, st, "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	for i, ev := range events {
		if i > 0 && !s.sleep(r.Context().Done(), st.ChunkDelay) {
			// Cut rather than return: returning would end the body cleanly
			// and the client would take a half reply for a whole one.
			s.cut(w)
			return
		}
		if _, err := w.Write(ev); err != nil {
			s.opts.logger.Debug("fakellm: client went away", "err", err)
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
	if st.Drop {
		s.cut(w)
	}
}

// cut breaks the connection under w without finishing the response, so the
// client sees an unexpected EOF rather than a clean end of body.
func (s *Server) cut(w http.ResponseWriter) {
	// Hijack flushes what was written (headers included, if any) and no
	// more: a reply that never started stays without a status line.
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Expected while closing (the connection is gone already); a
		// scripted Drop that cannot cut is worth a warning.
		level := slog.LevelWarn
		select {
		case <-s.done:
			level = slog.LevelDebug
		default:
		}
		s.opts.logger.Log(context.Background(), level, "fakellm: cannot cut the connection", "err", err)
		return
	}
	if err := conn.Close(); err != nil {
		s.opts.logger.Debug("fakellm: closing cut connection", "err", err)
	}
}

// logValue keeps long bodies out of log lines.
func logValue(b []byte) slog.Value {
	const limit = 200
	s := string(b)
	if len(s) > limit {
		s = s[:limit] + "…"
	}
	return slog.StringValue(strings.ToValidUTF8(s, "?"))
}
