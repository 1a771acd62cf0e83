package anthropic

import (
	"bytes"
	"context"
	"net/http"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/talaria-agent/talaria/llm"
)

// drainTimeout bounds the read for the end of the body after message_stop.
// Reading to EOF lets net/http reuse the connection (no new TLS handshake on
// the next call); the bound keeps a server that holds the stream open from
// delaying the caller.
const drainTimeout = 2 * time.Second

// consume reads SSE events until message_stop, an error, or the consumer
// stops. The caller closes dec.
func (p *Provider) consume(ctx context.Context, model string, h http.Header, dec ssestream.Decoder, yield func(llm.Event, error) bool) {
	asm := newAssembler()
	asm.reqModel = model
	for dec.Next() {
		// Events already buffered must not outlive a cancelled ctx.
		if ctx.Err() != nil {
			yield(llm.Event{}, p.streamBroke(ctx, model, h, asm.partialText(), ctx.Err()))
			return
		}
		ev := dec.Event()
		if ev.Type == "ping" {
			continue
		}
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 {
			continue
		}
		events, err := asm.feed(ev.Type, data)
		if err != nil {
			yield(llm.Event{}, p.eventError(model, h, asm.partialText(), err))
			return
		}
		for _, e := range events {
			if !yield(e, nil) {
				return
			}
		}
		if asm.stopped {
			if yield(llm.Event{Type: llm.EventDone, Response: asm.response()}, nil) {
				drain(dec, p.drainWait)
			}
			return
		}
	}
	yield(llm.Event{}, p.streamBroke(ctx, model, h, asm.partialText(), dec.Err()))
}

// drain reads what follows message_stop (normally just the end of the
// chunked body) so the connection goes back to the pool.
func drain(dec ssestream.Decoder, wait time.Duration) {
	t := time.AfterFunc(wait, func() { _ = dec.Close() })
	defer t.Stop()
	for dec.Next() {
	}
}
