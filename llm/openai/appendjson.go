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
	dst = wire.AppendField(dst, `{"role":`, w.Role)
	dst, err := appendContent(dst, w.Content, appendWireParts)
	if err != nil {
		return dst, err
	}
	if len(w.ToolCalls) > 0 {
		dst = appendList(append(dst, `,"tool_calls":`...), w.ToolCalls, func(dst []byte, c wireToolCall) []byte {
			dst = wire.AppendField(dst, `{"id":`, c.ID)
			dst = wire.AppendField(dst, `,"type":`, c.Type)
			dst = wire.AppendField(dst, `,"function":{"name":`, c.Function.Name)
			dst = wire.AppendField(dst, `,"arguments":`, c.Function.Arguments)
			return append(dst, "}}"...)
		})
	}
	if w.ToolCallID != "" {
		dst = wire.AppendField(dst, `,"tool_call_id":`, w.ToolCallID)
	}
	return append(dst, '}'), nil
}

// appendContent appends the content field of either API's message: its
// own parts (the only non-string type it holds), written by appendParts,
// or else a string or null, through encoding/json.
func appendContent[P any](dst []byte, content any, appendParts func([]byte, []P) []byte) ([]byte, error) {
	dst = append(dst, `,"content":`...)
	if parts, ok := content.([]P); ok {
		return appendParts(dst, parts), nil
	}
	dst, err := wire.AppendValue(dst, content)
	if err != nil {
		return dst, fmt.Errorf("encoding request: %w", err)
	}
	return dst, nil
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
		dst = wire.AppendField(dst, `{"type":`, p.Type)
		if p.Text != "" {
			dst = wire.AppendField(dst, `,"text":`, p.Text)
		}
		if p.ImageURL != nil {
			dst = wire.AppendField(dst, `,"image_url":{"url":`, p.ImageURL.URL)
			dst = append(dst, '}')
		}
		return append(dst, '}')
	})
}

func (m rsMessage) appendJSON(dst []byte) ([]byte, error) {
	dst = wire.AppendField(dst, `{"type":`, m.Type)
	dst = wire.AppendField(dst, `,"role":`, m.Role)
	dst, err := appendContent(dst, m.Content, appendRsParts)
	if err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

func appendRsParts(dst []byte, parts []rsPart) []byte {
	return appendList(dst, parts, func(dst []byte, p rsPart) []byte {
		dst = wire.AppendField(dst, `{"type":`, p.Type)
		if p.Text != "" {
			dst = wire.AppendField(dst, `,"text":`, p.Text)
		}
		if p.ImageURL != "" {
			dst = wire.AppendField(dst, `,"image_url":`, p.ImageURL)
		}
		return append(dst, '}')
	})
}

func (c rsFunctionCall) appendJSON(dst []byte) []byte {
	return appendStringObject(dst, "type", c.Type, "call_id", c.CallID, "name", c.Name, "arguments", c.Arguments)
}

func (o rsFunctionOutput) appendJSON(dst []byte) []byte {
	return appendStringObject(dst, "type", o.Type, "call_id", o.CallID, "output", o.Output)
}

// appendStringObject appends an object of string fields, given as name
// and value pairs in declaration order (names are plain ASCII).
func appendStringObject(dst []byte, fields ...string) []byte {
	sep := byte('{')
	for i := 0; i+1 < len(fields); i += 2 {
		dst = append(append(dst, sep, '"'), fields[i]...)
		dst = wire.AppendString(append(dst, '"', ':'), fields[i+1])
		sep = ','
	}
	return append(dst, '}')
}
