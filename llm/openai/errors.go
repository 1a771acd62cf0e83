package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	oai "github.com/openai/openai-go/v3"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/internal/netclass"
)

// newError starts every APIError of the adapter: who failed, over which
// wire format, at which endpoint.
func (p *conn) newError(model string) *llm.APIError {
	return &llm.APIError{Provider: p.name, Model: model, API: p.api, BaseURL: p.baseURL}
}

// localError is a failure before anything was sent (the request could not be
// built).
func (p *conn) localError(model, msg string) *llm.APIError {
	e := p.newError(model)
	e.Message, e.Err = msg, errors.New(msg)
	return e
}

// requestError turns the failure of the HTTP exchange (before any stream
// byte was read) into an APIError. sdkErr may be nil when the SDK accepted a
// non-2xx answer (3xx) that Talaria still treats as a failure.
func (p *conn) requestError(ctx context.Context, model string, sdkErr error, c *capture) *llm.APIError {
	if ctx.Err() != nil {
		return p.transportError(ctx, model, sdkErr, false, "")
	}
	if c.status != 0 && (c.status < 200 || c.status > 299) {
		// The SDK returns *openai.Error only for JSON bodies with an error
		// object; for {"error":"text"} (Ollama, llama.cpp) it returns its
		// own decoding error. Callers get an *openai.Error either way.
		var sdkAPIErr *oai.Error
		if !errors.As(sdkErr, &sdkAPIErr) {
			sdkAPIErr = &oai.Error{StatusCode: c.status}
		}
		msg, ok := bodyMessage(c.body)
		if !ok {
			msg = sdkAPIErr.Error()
		}
		e := p.newError(model)
		e.StatusCode, e.Header, e.Body, e.Message, e.Err = c.status, c.header, c.body, msg, sdkAPIErr
		return e
	}
	return p.transportError(ctx, model, sdkErr, false, "")
}

// transportError builds the APIError for a connection-level failure; midStream
// and partial describe what was already yielded. When the caller's context
// ended, its error is the cause whatever the transport reported.
func (p *conn) transportError(ctx context.Context, model string, err error, midStream bool, partial string) *llm.APIError {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		if err == nil {
			err = cerr
		} else {
			err = fmt.Errorf("%w (%w)", cerr, err)
		}
	}
	if err == nil {
		err = errors.New("unknown transport failure")
	}
	e := p.newError(model)
	e.Message, e.Transport, e.Err = err.Error(), netclass.Classify(err), err
	e.MidStream, e.PartialText = midStream, partial
	return e
}

// bodyMessage extracts the human-readable message from an error body, in the
// shapes compatible servers use: {"error":{"message":…}} (OpenAI,
// OpenRouter), {"error":"…"} (Ollama, llama.cpp), {"message":…} (vLLM) and
// {"detail":"…"} (FastAPI-based servers).
func bodyMessage(body []byte) (string, bool) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return "", false
	}
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &v) != nil {
		return "", false
	}
	if msg, ok := errorObjectMessage(v.Error); ok {
		return msg, true
	}
	for _, raw := range []json.RawMessage{v.Message, v.Detail} {
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "" {
			return s, true
		}
	}
	return "", false
}

// errorObjectMessage reads the message of an "error" value, which is either
// an object with a message or a bare string.
func errorObjectMessage(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, s != ""
	}
	var obj struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Message != "" {
		return obj.Message, true
	}
	return "", false
}

// errorCodeStatus returns error.code when it is an HTTP status, as
// OpenRouter sends it ("The HTTP Response will have the same status code as
// error.code"); mid-stream, that code is the only status there is.
func errorCodeStatus(raw json.RawMessage) int {
	var obj struct {
		Code json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &obj) != nil || len(obj.Code) == 0 {
		return 0
	}
	var n int
	if json.Unmarshal(obj.Code, &n) != nil {
		return 0
	}
	if n >= 400 && n <= 599 {
		return n
	}
	return 0
}

// streamError builds the APIError for an error object that arrived in place
// of content (in-stream), keeping the raw event as Body.
func (p *conn) streamError(model string, header http.Header, data []byte, errField json.RawMessage, midStream bool, partial string) *llm.APIError {
	msg, ok := errorObjectMessage(errField)
	if !ok {
		msg = "error object in stream"
	}
	e := p.newError(model)
	e.StatusCode, e.Header, e.Body, e.Message = errorCodeStatus(errField), header, capBody(data), msg
	e.MidStream, e.PartialText = midStream, partial
	e.Err = errors.New("in-stream error: " + strings.TrimSpace(msg))
	return e
}

func capBody(b []byte) []byte {
	if len(b) > maxErrorBody {
		b = b[:maxErrorBody]
	}
	return bytes.Clone(b)
}
