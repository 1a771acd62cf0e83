package llm

import (
	"context"
	"errors"
	"iter"
)

// Redact wraps p so that the text of every error it yields has passed
// through scrub first: a provider that echoes the request's Authorization
// header (or a key in its error body) then cannot put the key into a
// failure row, an event stream, a log line or a trace, since all of them
// are written from this error. Events pass unchanged.
func Redact(p Provider, scrub func(string) string) Provider {
	if p == nil || scrub == nil {
		return p
	}
	return &redacting{Provider: p, scrub: scrub}
}

type redacting struct {
	Provider
	scrub func(string) string
}

func (r *redacting) Stream(ctx context.Context, req *Request) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for ev, err := range r.Provider.Stream(ctx, req) {
			if err != nil {
				err = r.error(err)
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

func (r *redacting) error(err error) error {
	var ae *APIError
	if !errors.As(err, &ae) {
		return &scrubbedError{msg: r.scrub(err.Error()), cause: err}
	}
	c := *ae
	c.Message = r.scrub(c.Message)
	c.PartialText = r.scrub(c.PartialText)
	if c.Body != nil {
		c.Body = []byte(r.scrub(string(c.Body)))
	}
	if c.Err != nil {
		c.Err = &scrubbedError{msg: r.scrub(c.Err.Error()), cause: c.Err}
	}
	return &c
}

// scrubbedError shows the scrubbed text and keeps the cause for errors.Is
// (timeouts, cancellation).
type scrubbedError struct {
	msg   string
	cause error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.cause }
