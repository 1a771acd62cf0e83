package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/talaria-agent/talaria/llm"
)

// maxJSONBody caps a non-streamed answer; far above any real completion.
const maxJSONBody = 32 << 20

// errNoEnd is the cause when a stream closes cleanly but too early.
var errNoEnd = fmt.Errorf("stream ended without finish_reason or [DONE]: %w", io.ErrUnexpectedEOF)

// reader consumes one successful (2xx) response.
type reader struct {
	p      *conn
	model  string
	header http.Header
	asm    assembler
}

// readSSE reads a text/event-stream answer. The SDK's ssestream.Stream is not
// used on top of the decoder because it reports [DONE] and a clean EOF alike,
// and telling them apart is how a truncated stream is caught.
func (r *reader) readSSE(ctx context.Context, resp *http.Response, yield func(llm.Event, error) bool) {
	dec := ssestream.NewDecoder(resp)
	sawDone := false
	for dec.Next() {
		if ctx.Err() != nil {
			// Buffered events must not outlive a cancellation.
			yield(llm.Event{}, r.midStream(r.p.transportError(ctx, r.model, ctx.Err(), true, r.asm.partialText())))
			return
		}
		ev := dec.Event()
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 {
			continue
		}
		if bytes.Equal(data, []byte("[DONE]")) {
			sawDone = true
			break
		}
		if !r.handle(ev.Type, data, true, yield) {
			return
		}
	}
	if !sawDone {
		err := dec.Err()
		switch {
		case ctx.Err() != nil:
			yield(llm.Event{}, r.midStream(r.p.transportError(ctx, r.model, err, true, r.asm.partialText())))
			return
		case !r.asm.finished:
			if err == nil {
				err = errNoEnd
			}
			yield(llm.Event{}, r.midStream(r.p.transportError(ctx, r.model, err, true, r.asm.partialText())))
			return
		}
		// finish_reason arrived and only the trailing usage chunk or [DONE]
		// was lost: the answer is complete, and a retry would pay for it
		// again.
	} else {
		drain(resp.Body)
	}
	r.done(yield)
}

// readJSON reads a non-streamed chat.completion, sent by servers that ignore
// stream:true, as if it were one chunk.
func (r *reader) readJSON(ctx context.Context, resp *http.Response, yield func(llm.Event, error) bool) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxJSONBody))
	if err != nil {
		e := r.p.transportError(ctx, r.model, err, false, "")
		e.Header = r.header
		yield(llm.Event{}, e)
		return
	}
	data = bytes.TrimSpace(data)
	if msg := notACompletion(data); msg != "" {
		// {"foo":1}: not an answer at all. Said as what it is, once,
		// instead of passing as an empty answer the guards retry and price.
		e := r.p.newError(r.model)
		e.StatusCode, e.Header, e.Body, e.Message, e.Err, e.Malformed = http.StatusOK, r.header, capBody(data), msg, errMalformed, true
		yield(llm.Event{}, e)
		return
	}
	if !r.handle("", data, false, yield) {
		return
	}
	r.done(yield)
}

// errMalformed is the cause of a 200 answer that is not a chat completion.
var errMalformed = errors.New("malformed response")

// notACompletion says why a whole JSON answer is not a chat completion (no
// choices and no error), or "" when it is one (or an error the normal path
// reports).
func notACompletion(data []byte) string {
	var probe struct {
		Choices json.RawMessage `json:"choices"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return "" // the normal path reports undecodable JSON
	}
	if len(probe.Choices) > 0 && string(probe.Choices) != "null" || len(probe.Error) > 0 && string(probe.Error) != "null" {
		return ""
	}
	return "malformed response: the server answered 200 with JSON that is not a chat completion (no choices); check that the base URL is an OpenAI-compatible API"
}

// handle decodes one chunk and yields its events; false means the sequence
// has ended (an error was yielded or the consumer stopped).
func (r *reader) handle(eventType string, data []byte, midStream bool, yield func(llm.Event, error) bool) bool {
	var c wireChunk
	if err := json.Unmarshal(data, &c); err != nil {
		err = fmt.Errorf("malformed chunk: %w", err)
		e := r.p.newError(r.model)
		e.Body, e.Message, e.Err = capBody(data), err.Error(), err
		yield(llm.Event{}, r.midStreamIf(midStream, e))
		return false
	}
	if c.hasError() || eventType == "error" {
		errField := c.Error
		if !c.hasError() {
			errField = data // `event: error` whose data is the error itself
		}
		e := r.p.streamError(r.model, r.header, data, errField, midStream, r.asm.partialText())
		if !midStream && e.StatusCode == 0 {
			e.StatusCode = http.StatusOK // a whole answer that is an error
		}
		yield(llm.Event{}, e)
		return false
	}
	for _, ev := range r.asm.add(&c) {
		if !yield(ev, nil) {
			return false
		}
	}
	return true
}

func (r *reader) done(yield func(llm.Event, error) bool) {
	for _, ev := range r.asm.finish() {
		if !yield(ev, nil) {
			return
		}
	}
}

// midStream marks e as a failure after the stream started.
func (r *reader) midStream(e *llm.APIError) *llm.APIError {
	return r.midStreamIf(true, e)
}

func (r *reader) midStreamIf(mid bool, e *llm.APIError) *llm.APIError {
	e.Header = r.header
	if mid {
		e.MidStream = true
		e.PartialText = r.asm.partialText()
	}
	return e
}

// isJSON reports whether a Content-Type is JSON rather than an event stream.
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || len(mt) > 5 && mt[len(mt)-5:] == "+json")
}
