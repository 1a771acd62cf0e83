package openai

import (
	"fmt"

	"github.com/talaria-agent/talaria/llm/internal/wire"
)

// The message items of both bodies are written by hand: encoding/json
// spends most of a long session's first encode on reflection and
// interface dispatch per field. Each appender writes exactly what
// encoding/json writes for its struct (fields in declaration order,
// omitempty as tagged, strings through wire.AppendString); the fuzz tests
// compare them with encoding/json, and TestAppendersCoverEveryField fails
// when a struct gains a field its appender does not write. The full
// encoders (encodeRequest, encodeResponsesRequest) still use
// encoding/json: they are the reference the incremental bodies are
// compared with.

// appendItem appends the JSON of one message-array item: a type written
// by hand, or anything else (replayed reasoning items, a compaction
// checkpoint) through enc.
func appendItem(dst []byte, v any, enc *wire.JSONEncoder) ([]byte, error) {
	switch v := v.(type) {
	case wireMessage:
		return v.appendJSON(dst)
	case rsMessage:
		return v.appendJSON(dst)
	case rsFunctionCall:
		return v.appendJSON(dst), nil
	case rsFunctionOutput:
		return v.appendJSON(dst), nil
	}
	b, err := enc.Encode(v)
	if err != nil {
		return dst, fmt.Errorf("encoding request: %w", err)
	}
	return append(dst, b...), nil
}

func (w wireMessage) appendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"role":`...)
	dst = wire.AppendString(dst, w.Role)
	dst = append(dst, `,"content":`...)
	var err error
	if parts, ok := w.Content.([]wirePart); ok {
		dst = appendWireParts(dst, parts)
	} else if dst, err = wire.AppendValue(dst, w.Content); err != nil {
		return dst, fmt.Errorf("encoding request: %w", err)
	}
	if len(w.ToolCalls) > 0 {
		dst = appendList(append(dst, `,"tool_calls":`...), w.ToolCalls, func(dst []byte, c wireToolCall) []byte {
			dst = append(dst, `{"id":`...)
			dst = wire.AppendString(dst, c.ID)
			dst = append(dst, `,"type":`...)
			dst = wire.AppendString(dst, c.Type)
			dst = append(dst, `,"function":{"name":`...)
			dst = wire.AppendString(dst, c.Function.Name)
			dst = append(dst, `,"arguments":`...)
			dst = wire.AppendString(dst, c.Function.Arguments)
			return append(dst, "}}"...)
		})
	}
	if w.ToolCallID != "" {
		dst = append(dst, `,"tool_call_id":`...)
		dst = wire.AppendString(dst, w.ToolCallID)
	}
	return append(dst, '}'), nil
}

// appendList appends a JSON array of items written by each; a nil slice
// is null, as encoding/json writes it.
func appendList[T any](dst []byte, items []T, each func([]byte, T) []byte) []byte {
	if items == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, it := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = each(dst, it)
	}
	return append(dst, ']')
}

func appendWireParts(dst []byte, parts []wirePart) []byte {
	return appendList(dst, parts, func(dst []byte, p wirePart) []byte {
		dst = append(dst, `{"type":`...)
		dst = wire.AppendString(dst, p.Type)
		if p.Text != "" {
			dst = append(dst, `,"text":`...)
			dst = wire.AppendString(dst, p.Text)
		}
		if p.ImageURL != nil {
			dst = append(dst, `,"image_url":{"url":`...)
			dst = wire.AppendString(dst, p.ImageURL.URL)
			dst = append(dst, '}')
		}
		return append(dst, '}')
	})
}

func (m rsMessage) appendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"type":`...)
	dst = wire.AppendString(dst, m.Type)
	dst = append(dst, `,"role":`...)
	dst = wire.AppendString(dst, m.Role)
	dst = append(dst, `,"content":`...)
	var err error
	if parts, ok := m.Content.([]rsPart); ok {
		dst = appendRsParts(dst, parts)
	} else if dst, err = wire.AppendValue(dst, m.Content); err != nil {
		return dst, fmt.Errorf("encoding request: %w", err)
	}
	return append(dst, '}'), nil
}

func appendRsParts(dst []byte, parts []rsPart) []byte {
	return appendList(dst, parts, func(dst []byte, p rsPart) []byte {
		dst = append(dst, `{"type":`...)
		dst = wire.AppendString(dst, p.Type)
		if p.Text != "" {
			dst = append(dst, `,"text":`...)
			dst = wire.AppendString(dst, p.Text)
		}
		if p.ImageURL != "" {
			dst = append(dst, `,"image_url":`...)
			dst = wire.AppendString(dst, p.ImageURL)
		}
		return append(dst, '}')
	})
}

func (c rsFunctionCall) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"type":`...)
	dst = wire.AppendString(dst, c.Type)
	dst = append(dst, `,"call_id":`...)
	dst = wire.AppendString(dst, c.CallID)
	dst = append(dst, `,"name":`...)
	dst = wire.AppendString(dst, c.Name)
	dst = append(dst, `,"arguments":`...)
	dst = wire.AppendString(dst, c.Arguments)
	return append(dst, '}')
}

func (o rsFunctionOutput) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"type":`...)
	dst = wire.AppendString(dst, o.Type)
	dst = append(dst, `,"call_id":`...)
	dst = wire.AppendString(dst, o.CallID)
	dst = append(dst, `,"output":`...)
	dst = wire.AppendString(dst, o.Output)
	return append(dst, '}')
}
