package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/talaria-agent/talaria/llm"
)

const (
	// maxErrorBody caps the raw body kept on an APIError.
	maxErrorBody = 64 << 10
	// maxMessage caps Message when it falls back to library text, which can
	// embed a whole non-JSON body.
	maxMessage = 2048
)

// errStreamEnded is the cause of a stream that ended cleanly but before
// message_stop: the answer is incomplete.
var errStreamEnded = errors.New("stream ended before message_stop")

// errEmptyBody is the cause when a 2xx answer has no body to stream.
var errEmptyBody = errors.New("response has no body")

// responseCapture records the HTTP answer of one call, as the transport saw
// it, so the APIError keeps status, headers and raw body whatever the SDK
// makes of them (it drops them for bodies it cannot parse or read).
type responseCapture struct {
	status int
	header http.Header
	body   []byte
}

// middleware is an SDK middleware. On an error status it reads at most
// maxErrorBody bytes and hands the SDK that copy, so a huge error body is
// never held in memory twice or in full.
func (c *responseCapture) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res == nil {
		return res, err
	}
	c.status, c.header = res.StatusCode, res.Header
	if res.StatusCode >= 400 && res.Body != nil {
		// A read error leaves what was read: the status already says enough.
		c.body, _ = io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
		_ = res.Body.Close()
		res.Body = io.NopCloser(bytes.NewReader(c.body))
	}
	return res, nil
}

// newError starts every APIError of the adapter: who failed, over which
// wire format, at which endpoint.
func (p *Provider) newError(model string, cause error) *llm.APIError {
	return &llm.APIError{Provider: p.name, Model: model, API: apiName, BaseURL: p.baseURL, Err: cause}
}

// buildError reports a request that could not be encoded; it never reached
// the network.
func (p *Provider) buildError(model string, err error) *llm.APIError {
	e := p.newError(model, err)
	e.Message = err.Error()
	return e
}

// requestError reports a call that failed before the stream started: an
// HTTP error status, or a transport failure with no answer at all.
func (p *Provider) requestError(ctx context.Context, model string, err error, c *responseCapture) *llm.APIError {
	e := p.newError(model, err)
	if c.status >= 400 {
		e.StatusCode, e.Header, e.Body = c.status, c.header, c.body
		e.Message = errorMessage(c.body)
		if e.Message == "" {
			e.Message = capText(err.Error())
		}
		return e
	}
	// The middleware sees every answer the SDK gets, so this only matters
	// if an SDK change bypasses it.
	if aerr, ok := errors.AsType[*sdk.Error](err); ok && aerr.StatusCode != 0 {
		e.StatusCode = aerr.StatusCode
		if aerr.Response != nil {
			e.Header = aerr.Response.Header
		}
		e.Body = capBytes([]byte(aerr.RawJSON()))
		e.Message = errorMessage(e.Body)
		if e.Message == "" {
			e.Message = capText(err.Error())
		}
		return e
	}
	e.Err = withContext(ctx, err)
	e.Transport = classifyTransport(ctx, err)
	e.Message = capText(e.Err.Error())
	return e
}

// streamBroke reports a stream that stopped after the 200: a read error, a
// cancelled ctx, or a clean end before message_stop (err == nil).
func (p *Provider) streamBroke(ctx context.Context, model string, h http.Header, partial string, err error) *llm.APIError {
	kind := classifyTransport(ctx, err)
	if err == nil {
		err = errStreamEnded
		if kind == llm.TransportNone {
			kind = llm.TransportEOF
		}
	}
	e := p.newError(model, withContext(ctx, err))
	e.Header, e.MidStream, e.PartialText, e.Transport = h, true, partial, kind
	e.Message = capText(e.Err.Error())
	return e
}

// eventError reports an SSE error event or an unreadable event. There is no
// HTTP status for it (the 200 was already sent), so StatusCode stays 0 and
// Body holds the event's JSON for the classifier.
func (p *Provider) eventError(model string, h http.Header, partial string, err error) *llm.APIError {
	e := p.newError(model, err)
	e.Header, e.MidStream, e.PartialText = h, true, partial
	var se *streamErrorEvent
	var me *malformedEventError
	switch {
	case errors.As(err, &se):
		e.Body = capBytes(se.Body)
		e.Message = se.Message
		if e.Message == "" {
			e.Message = capText(string(se.Body))
		}
	case errors.As(err, &me):
		e.Body = capBytes(me.Data)
		e.Message = capText(err.Error())
	default:
		e.Message = capText(err.Error())
	}
	return e
}

// withContext makes sure a failure caused by ctx matches ctx's error under
// errors.Is, whatever the transport turned it into.
func withContext(ctx context.Context, err error) error {
	ctxErr := ctx.Err()
	switch {
	case ctxErr == nil:
		return err
	case err == nil:
		return ctxErr
	case errors.Is(err, ctxErr):
		return err
	}
	return fmt.Errorf("%w: %w", ctxErr, err)
}

// errorMessage extracts the provider's message from an error body:
// {"error":{"message":...}} (Anthropic and most proxies), {"error":"..."},
// or {"message":"..."}. It returns "" for anything else.
func errorMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if len(body) == 0 || json.Unmarshal(body, &v) != nil {
		return ""
	}
	if len(v.Error) > 0 {
		var obj struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(v.Error, &obj) == nil && obj.Message != "" {
			return obj.Message
		}
		var s string
		if json.Unmarshal(v.Error, &s) == nil && s != "" {
			return s
		}
	}
	return v.Message
}

func capBytes(b []byte) []byte {
	if len(b) > maxErrorBody {
		return b[:maxErrorBody]
	}
	return b
}

// capText shortens s to maxMessage bytes without splitting a rune.
func capText(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
