package failover

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/talaria-agent/talaria/llm"
)

// Input is everything Classify looks at for one failed call.
type Input struct {
	Provider, Model string
	API             string // wire format: "openai", "openai-responses", "anthropic", "gemini", "" unknown (helps provider-specific shapes)
	BaseURL         string // helps recognise OpenRouter / Azure / local servers, and names an unreachable one
	Status          int
	Header          http.Header
	Body            []byte
	Message         string
	Transport       llm.TransportKind
	// Connect says why no connection could be made, for Transport connect.
	Connect   llm.ConnectCause
	MidStream bool
	// Session size, for overflow heuristics (an empty 400 or a bare
	// disconnect on a very large request).
	ContextTokens, ContextWindow, Messages int
	// NoKeyHint, when set, says the request carried no API key and how a
	// person gives the route one ("set LOCAL_KEY"): a 401 is then a
	// missing key, not a refused one.
	NoKeyHint string
	// Malformed: a successful status whose body is no answer of the wire
	// format (llm.APIError.Malformed).
	Malformed bool
	// Now is the clock for HTTP-date Retry-After and relative reset headers;
	// zero means time.Now().
	Now time.Time
}

// InputFromError builds an Input from err: the fields of an *llm.APIError
// found with errors.As (the adapter's wire API and base URL among them, so
// no caller has to say which format failed); a context.Canceled becomes
// Transport canceled and a context.DeadlineExceeded a timeout; anything else
// carries only its text. A connection that could not be made also says why
// (Connect).
func InputFromError(err error) Input {
	if err == nil {
		return Input{}
	}
	var in Input
	var ae *llm.APIError
	if errors.As(err, &ae) {
		in = Input{
			Provider: ae.Provider, Model: ae.Model, API: ae.API, BaseURL: ae.BaseURL, Status: ae.StatusCode, Header: ae.Header,
			Body: ae.Body, Message: ae.Message, Transport: ae.Transport, MidStream: ae.MidStream,
			Malformed: ae.Malformed,
		}
		if in.Message == "" && ae.Err != nil {
			in.Message = ae.Err.Error()
		}
	} else {
		in.Message = err.Error()
	}
	// The caller's own context wins over whatever the transport reported:
	// a cancel must never be blamed on the provider.
	if in.Transport == llm.TransportNone || in.Status == 0 {
		switch {
		case errors.Is(err, context.Canceled):
			in.Transport = llm.TransportCanceled
		case errors.Is(err, context.DeadlineExceeded) && in.Transport == llm.TransportNone:
			in.Transport = llm.TransportTimeout
		}
	}
	if in.Transport == llm.TransportConnect {
		in.Connect = llm.ConnectCauseOf(err)
	}
	return in
}

// ClassifyError is Classify(InputFromError(err)) with the session-size
// fields left for the caller; convenient where no size is known.
func ClassifyError(err error) Classified {
	return Classify(InputFromError(err))
}
