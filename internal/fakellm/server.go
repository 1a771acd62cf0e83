package fakellm

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

type options struct {
	strict  bool
	latency time.Duration
	logger  *slog.Logger
	// noContextManagement: see WithoutContextManagement.
	noContextManagement bool
}

// Option configures a Server.
type Option func(*options)

// WithStrict turns request validation on or off (default on). Off, every
// request that reaches a known route gets the next scripted reply, even one
// whose body is not JSON.
func WithStrict(on bool) Option { return func(o *options) { o.strict = on } }

// WithoutContextManagement makes the Responses route refuse the
// context_management field (native compaction) with a structured 400, as
// endpoints without server-side compaction do.
func WithoutContextManagement() Option { return func(o *options) { o.noContextManagement = true } }

// WithLatency sets the default wait before the first byte of every reply.
func WithLatency(d time.Duration) Option { return func(o *options) { o.latency = d } }

// WithLogger sets where the server logs requests and problems (default:
// nowhere).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// Server is a scripted model server listening on 127.0.0.1. All methods are
// safe for concurrent use.
type Server struct {
	opts   options
	url    string
	hs     *http.Server
	done   chan struct{} // closed by Close: ends waits and streams
	served chan struct{} // closed when Serve has returned
	once   sync.Once

	mu         sync.Mutex
	idle       *sync.Cond // signalled when active drops to zero
	queue      []Step
	models     map[string][]Step
	def        func(Request) Step
	reqs       []Request
	violations []string
	arrived    chan struct{} // closed and replaced on every request, for Wait
	seq        int           // source of generated ids
	keyEpoch   int           // bumped by ForgetReasoning
	closed     bool
	active     int // handlers running
}

// New starts a server on 127.0.0.1:0 that serves immediately. It panics
// when no port can be had, as httptest.NewServer does: there is nothing a
// test could do about it.
func New(opts ...Option) *Server {
	o := options{strict: true, logger: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("fakellm: listen on 127.0.0.1: %v", err))
	}
	s := &Server{
		opts:    o,
		url:     "http://" + ln.Addr().String(),
		done:    make(chan struct{}),
		served:  make(chan struct{}),
		models:  map[string][]Step{},
		arrived: make(chan struct{}),
	}
	s.idle = sync.NewCond(&s.mu)
	s.hs = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(o.logger.Handler(), slog.LevelDebug),
	}
	go func() {
		defer close(s.served)
		_ = s.hs.Serve(ln) // returns http.ErrServerClosed after Close
	}()
	return s
}

// URL is the server's root, http://127.0.0.1:PORT.
func (s *Server) URL() string { return s.url }

// OpenAIBaseURL is the base URL openai-go wants (URL()+"/v1").
func (s *Server) OpenAIBaseURL() string { return s.url + "/v1" }

// GeminiBaseURL is the server root google.golang.org/genai wants; it
// appends v1beta/models/MODEL:streamGenerateContent itself.
func (s *Server) GeminiBaseURL() string { return s.url + "/" }

// AnthropicBaseURL is the base URL anthropic-sdk-go wants; it appends
// /v1/messages itself.
func (s *Server) AnthropicBaseURL() string { return s.url }

// Close stops the server and ends in-flight replies (streams break off,
// waits end). It returns when every handler has finished.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.done)
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		_ = s.hs.Close()
		<-s.served
		s.mu.Lock()
		for s.active > 0 {
			s.idle.Wait()
		}
		s.mu.Unlock()
	})
}

// ForgetReasoning rotates the key the server encrypts reasoning with, as a
// real provider does when an organization or region changes: every
// encrypted reasoning item issued before no longer verifies and is rejected
// with invalid_encrypted_content.
func (s *Server) ForgetReasoning() {
	s.mu.Lock()
	s.keyEpoch++
	s.mu.Unlock()
}

func (s *Server) epoch() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keyEpoch
}

// Script appends steps to the default queue.
func (s *Server) Script(steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, steps...)
}

// ScriptModel appends steps to the queue of model: requests naming that
// model take from it first, then from the default queue.
func (s *Server) ScriptModel(model string, steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models[model] = append(s.models[model], steps...)
}

// SetDefault sets the reply used when the queues are empty. With nil, such
// requests get an HTTP 500 error that says the script ran out.
func (s *Server) SetDefault(f func(Request) Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.def = f
}

// Requests returns copies of every request received on the API routes, in
// arrival order, including rejected ones.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.reqs))
	for i, r := range s.reqs {
		out[i] = r.clone()
	}
	return out
}

// Violations returns the strict-validation failures, each as "request N
// (api): message" where N indexes Requests(). Each was answered with a 400.
func (s *Server) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.violations...)
}

// Pending is the number of scripted steps not yet consumed.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.queue)
	for _, q := range s.models {
		n += len(q)
	}
	return n
}

// Reset clears the queues, the recorded requests and the violations. The
// default reply stays, and generated ids keep counting up so they never
// repeat within the server's life.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = nil
	s.models = map[string][]Step{}
	s.reqs = nil
	s.violations = nil
}

// Wait blocks until at least n requests have been received (counting since
// the last Reset) or timeout passes; it reports whether they were.
func (s *Server) Wait(n int, timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		s.mu.Lock()
		got, ch := len(s.reqs), s.arrived
		s.mu.Unlock()
		if got >= n {
			return true
		}
		select {
		case <-ch:
		case <-timer.C:
			return false
		case <-s.done:
			return false
		}
	}
}

// enter registers a running handler; false once the server is closed.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.active++
	return true
}

func (s *Server) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active--
	if s.active == 0 {
		s.idle.Broadcast()
	}
}

// record stores a request and returns its index. Unless reject is set
// (a request the server refuses takes no step) it also takes the request's
// step, in the same critical section: whoever sees the request recorded
// (Wait, Requests) sees its step gone from the queue too, so a step
// scripted after Wait returns can never be taken by the earlier request.
// def is the default function to call, without the lock, when no queue
// had a step (ok is then false and def may be nil).
func (s *Server) record(req Request, reject bool) (idx int, st Step, ok bool, def func(Request) Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	close(s.arrived)
	s.arrived = make(chan struct{})
	idx = len(s.reqs) - 1
	if reject {
		return idx, Step{}, false, nil
	}
	if q := s.models[req.Model]; len(q) > 0 {
		st, s.models[req.Model] = q[0], q[1:]
		return idx, st, true, nil
	}
	if len(s.queue) > 0 {
		st, s.queue = s.queue[0], s.queue[1:]
		return idx, st, true, nil
	}
	return idx, Step{}, false, s.def
}

func (s *Server) violate(idx int, api, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.violations = append(s.violations, fmt.Sprintf("request %d (%s): %s", idx, api, msg))
}

// newID returns prefix followed by the next number.
func (s *Server) newID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return fmt.Sprintf("%s%d", prefix, s.seq)
}

// sleep waits d, or until ctx ends or the server closes; false when the
// wait was cut short.
func (s *Server) sleep(done <-chan struct{}, d time.Duration) bool {
	if d <= 0 {
		select {
		case <-done:
			return false
		case <-s.done:
			return false
		default:
			return true
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	case <-s.done:
		return false
	}
}
