package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
)

// errMalformed is the cause of a 200 answer that is no Messages API stream.
var errMalformed = errors.New("malformed response")

// maxPlainBody bounds what is read of a 200 answer that is not an event
// stream: enough for any error object, never a whole wrong page.
const maxPlainBody = 64 << 10

// notAStream reports whether res is a plain JSON (or other non-SSE) answer
// where an event stream was asked for.
func notAStream(res *http.Response) bool {
	ct := res.Header.Get("Content-Type")
	if ct == "" {
		return false // some proxies drop it; let the SSE reader try
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt != "text/event-stream"
}

// plainAnswer reports a 200 answer that is not an event stream: an error
// object a proxy sent with the wrong status is classified by its body; any
// other body ({"foo":1}, an HTML page) is a malformed response, said once
// as such instead of retried as a broken stream and priced each time
// (issue 25 item 9; the OpenAI adapter does the same).
func (p *Provider) plainAnswer(model string, res *http.Response) error {
	data, rerr := io.ReadAll(io.LimitReader(res.Body, maxPlainBody))
	data = bytes.TrimSpace(data)
	var probe struct {
		Type  string          `json:"type"`
		Error json.RawMessage `json:"error"`
	}
	if rerr == nil && json.Unmarshal(data, &probe) == nil && probe.Type == "error" && len(probe.Error) > 0 {
		e := p.eventError(model, res.Header, "", &streamErrorEvent{Body: data, Message: errorMessage(data)})
		e.MidStream = false // nothing streamed: the whole answer was this error
		return e
	}
	e := p.newError(model, errMalformed)
	e.StatusCode, e.Header, e.Body, e.Malformed = http.StatusOK, res.Header, capBytes(data), true
	e.Message = "malformed response: the server answered 200 with " + describe(res, data) +
		" instead of a Messages API event stream; check that the base URL is an Anthropic-compatible API"
	return e
}

func describe(res *http.Response, data []byte) string {
	if json.Valid(data) {
		return "JSON that is not a message"
	}
	if ct := res.Header.Get("Content-Type"); ct != "" {
		return ct
	}
	return "a body"
}
