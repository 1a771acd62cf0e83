package openai

import (
	"bytes"
	"io"
	"net/http"

	"github.com/openai/openai-go/v3/option"
)

// maxErrorBody caps how much of an error body is kept: enough for every
// provider's error JSON, small enough to log and persist.
const maxErrorBody = 64 << 10

// capture records the HTTP answer of one call. The SDK turns a non-2xx
// answer into *openai.Error only when the body is JSON with an "error"
// object; otherwise it returns a bare parse error and the status is lost.
// Capturing in a middleware keeps status, headers and raw body either way.
// One capture serves exactly one call, and the SDK runs middleware on the
// calling goroutine, so no locking is needed.
type capture struct {
	status int
	header http.Header
	body   []byte
}

var _ option.Middleware = (*capture)(nil).middleware

func (c *capture) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	resp, err := next(req)
	if resp == nil {
		return resp, err
	}
	c.status = resp.StatusCode
	c.header = resp.Header.Clone()
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 || resp.Body == nil {
		return resp, err
	}
	// A read error keeps what arrived; the SDK then reports the status.
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close()
	c.body = body
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, err
}
