package llm

import (
	"context"
	"iter"
)

// EventType tells which fields of an Event are set.
type EventType int

const (
	// EventTextDelta: Text holds the next piece of the answer.
	EventTextDelta EventType = iota + 1
	// EventReasoningDelta: Text holds the next piece of the model's thinking.
	EventReasoningDelta
	// EventToolCallStart: Index, ID and Name of a new tool call.
	EventToolCallStart
	// EventToolCallDelta: Index and Text, the next fragment of its arguments.
	EventToolCallDelta
	// EventDone: Response holds the whole assembled answer. It is the last
	// event of every successful stream.
	EventDone
)

// Event is one item of a streamed answer.
type Event struct {
	Type     EventType
	Text     string
	Index    int
	ID       string
	Name     string
	Response *Response
}

// Response is a complete answer of one API call.
type Response struct {
	Message         Message // always RoleAssistant
	FinishReason    FinishReason
	RawFinishReason string // as the provider sent it
	Usage           Usage
	Model           string // as the provider reported it
	ID              string
}

// Provider is one model API. Stream sends req and yields the answer as it
// arrives.
//
// Closing rule: the sequence ends after exactly one of (a) an EventDone with a
// nil error, or (b) a non-nil error, which is then the last item. A consumer
// may stop early (break); the provider then closes the connection before the
// iterator returns. Cancelling ctx aborts the call and yields ctx's error
// wrapped in an *APIError whose Transport is set. Errors are *APIError values
// (use errors.As); a stream that dies after text was yielded has MidStream set.
type Provider interface {
	// Name is the configured provider name ("openai", "openrouter", ...),
	// used in errors, status lines and cooldown keys.
	Name() string
	Stream(ctx context.Context, req *Request) iter.Seq2[Event, error]
}

// Collect drains a stream, calling onEvent (if non-nil) for every event, and
// returns the final response or the error that ended the stream.
func Collect(seq iter.Seq2[Event, error], onEvent func(Event)) (*Response, error) {
	var final *Response
	for ev, err := range seq {
		if err != nil {
			return nil, err
		}
		if onEvent != nil {
			onEvent(ev)
		}
		if ev.Type == EventDone {
			final = ev.Response
		}
	}
	if final == nil {
		return nil, &APIError{Message: "stream ended without a final response", MidStream: true, Transport: TransportEOF}
	}
	return final, nil
}
