package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/talaria-agent/talaria/llm/internal/wire"
)

// appendMessage appends the JSON of one wire message exactly as
// encoding/json writes it (fields in declaration order, omitempty as
// tagged, strings through wire.AppendString, raw JSON compacted), without
// its reflection per field: a long session's first body is thousands of
// messages. FuzzAppendMessage compares it with encoding/json, and
// TestAppendersCoverEveryField fails when a wire struct gains a field.
// Blocks of a kind it does not know go through encoding/json.
func appendMessage(dst []byte, m *wireMessage) ([]byte, error) {
	if m == nil {
		return append(dst, "null"...), nil
	}
	dst = append(dst, `{"role":`...)
	dst = wire.AppendString(dst, m.Role)
	dst = append(dst, `,"content":`...)
	dst, err := appendBlocks(dst, m.Content)
	if err != nil {
		return dst, fmt.Errorf("%w: encoding: %w", ErrInvalidRequest, err)
	}
	return append(dst, '}'), nil
}

func appendBlocks(dst []byte, blocks []block) ([]byte, error) {
	if blocks == nil {
		return append(dst, "null"...), nil
	}
	dst = append(dst, '[')
	for i, b := range blocks {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendBlock(dst, b); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

// handWritten is a block kind appendBlock writes without encoding/json:
// appendFields appends every field but the cache mark, which every kind
// ends with, and returns the mark.
type handWritten interface {
	appendFields(dst []byte) ([]byte, *cacheMark, error)
}

func appendBlock(dst []byte, b block) ([]byte, error) {
	h, ok := b.(handWritten)
	if !ok {
		return wire.AppendValue(dst, b)
	}
	if reflect.ValueOf(h).IsNil() {
		// A nil *textBlock (or other kind), which encoding/json writes as null.
		return append(dst, "null"...), nil
	}
	dst, mark, err := h.appendFields(dst)
	if err != nil {
		return dst, err
	}
	if mark.CacheControl != nil {
		dst = wire.AppendField(dst, `,"cache_control":{"type":`, mark.CacheControl.Type)
		if mark.CacheControl.TTL != "" {
			dst = wire.AppendField(dst, `,"ttl":`, mark.CacheControl.TTL)
		}
		dst = append(dst, '}')
	}
	return append(dst, '}'), nil
}

func (b *textBlock) appendFields(dst []byte) ([]byte, *cacheMark, error) {
	dst = wire.AppendField(dst, `{"type":`, b.Type)
	return wire.AppendField(dst, `,"text":`, b.Text), &b.cacheMark, nil
}

func (b *imageBlock) appendFields(dst []byte) ([]byte, *cacheMark, error) {
	dst = wire.AppendField(dst, `{"type":`, b.Type)
	dst = wire.AppendField(dst, `,"source":{"type":`, b.Source.Type)
	if b.Source.MediaType != "" {
		dst = wire.AppendField(dst, `,"media_type":`, b.Source.MediaType)
	}
	if b.Source.Data != "" {
		dst = wire.AppendField(dst, `,"data":`, b.Source.Data)
	}
	if b.Source.URL != "" {
		dst = wire.AppendField(dst, `,"url":`, b.Source.URL)
	}
	return append(dst, '}'), &b.cacheMark, nil
}

func (b *toolUseBlock) appendFields(dst []byte) ([]byte, *cacheMark, error) {
	dst = wire.AppendField(dst, `{"type":`, b.Type)
	dst = wire.AppendField(dst, `,"id":`, b.ID)
	dst = wire.AppendField(dst, `,"name":`, b.Name)
	dst = append(dst, `,"input":`...)
	if b.Input == nil {
		return append(dst, "null"...), &b.cacheMark, nil
	}
	// encoding/json validates and compacts a json.RawMessage.
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, b.Input); err != nil {
		return dst, nil, fmt.Errorf("tool_use input: %w", err)
	}
	return buf.Bytes(), &b.cacheMark, nil
}

func (b *toolResultBlock) appendFields(dst []byte) ([]byte, *cacheMark, error) {
	dst = wire.AppendField(dst, `{"type":`, b.Type)
	dst = wire.AppendField(dst, `,"tool_use_id":`, b.ToolUseID)
	if b.Content != nil { // omitempty on an interface: only nil is empty
		dst = append(dst, `,"content":`...)
		var err error
		if blocks, ok := b.Content.([]block); ok {
			dst, err = appendBlocks(dst, blocks)
		} else {
			dst, err = wire.AppendValue(dst, b.Content)
		}
		if err != nil {
			return dst, nil, err
		}
	}
	if b.IsError {
		dst = append(dst, `,"is_error":true`...)
	}
	return dst, &b.cacheMark, nil
}

func (b *thinkingBlock) appendFields(dst []byte) ([]byte, *cacheMark, error) {
	dst = wire.AppendField(dst, `{"type":`, b.Type)
	dst = wire.AppendField(dst, `,"thinking":`, b.Thinking)
	return wire.AppendField(dst, `,"signature":`, b.Signature), &b.cacheMark, nil
}

func (b *redactedThinkingBlock) appendFields(dst []byte) ([]byte, *cacheMark, error) {
	dst = wire.AppendField(dst, `{"type":`, b.Type)
	return wire.AppendField(dst, `,"data":`, b.Data), &b.cacheMark, nil
}
