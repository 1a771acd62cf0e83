package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"

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

func appendBlock(dst []byte, b block) ([]byte, error) {
	var mark *cacheMark
	switch b := b.(type) {
	case *textBlock:
		if b == nil {
			return append(dst, "null"...), nil
		}
		dst = appendField(dst, `{"type":`, b.Type)
		dst = appendField(dst, `,"text":`, b.Text)
		mark = &b.cacheMark
	case *imageBlock:
		if b == nil {
			return append(dst, "null"...), nil
		}
		dst = appendField(dst, `{"type":`, b.Type)
		dst = appendField(dst, `,"source":{"type":`, b.Source.Type)
		if b.Source.MediaType != "" {
			dst = appendField(dst, `,"media_type":`, b.Source.MediaType)
		}
		if b.Source.Data != "" {
			dst = appendField(dst, `,"data":`, b.Source.Data)
		}
		if b.Source.URL != "" {
			dst = appendField(dst, `,"url":`, b.Source.URL)
		}
		dst = append(dst, '}')
		mark = &b.cacheMark
	case *toolUseBlock:
		if b == nil {
			return append(dst, "null"...), nil
		}
		dst = appendField(dst, `{"type":`, b.Type)
		dst = appendField(dst, `,"id":`, b.ID)
		dst = appendField(dst, `,"name":`, b.Name)
		dst = append(dst, `,"input":`...)
		if b.Input == nil {
			dst = append(dst, "null"...)
		} else {
			// encoding/json validates and compacts a json.RawMessage.
			buf := bytes.NewBuffer(dst)
			if err := json.Compact(buf, b.Input); err != nil {
				return dst, fmt.Errorf("tool_use input: %w", err)
			}
			dst = buf.Bytes()
		}
		mark = &b.cacheMark
	case *toolResultBlock:
		if b == nil {
			return append(dst, "null"...), nil
		}
		dst = appendField(dst, `{"type":`, b.Type)
		dst = appendField(dst, `,"tool_use_id":`, b.ToolUseID)
		if b.Content != nil { // omitempty on an interface: only nil is empty
			dst = append(dst, `,"content":`...)
			var err error
			if blocks, ok := b.Content.([]block); ok {
				dst, err = appendBlocks(dst, blocks)
			} else {
				dst, err = wire.AppendValue(dst, b.Content)
			}
			if err != nil {
				return dst, err
			}
		}
		if b.IsError {
			dst = append(dst, `,"is_error":true`...)
		}
		mark = &b.cacheMark
	case *thinkingBlock:
		if b == nil {
			return append(dst, "null"...), nil
		}
		dst = appendField(dst, `{"type":`, b.Type)
		dst = appendField(dst, `,"thinking":`, b.Thinking)
		dst = appendField(dst, `,"signature":`, b.Signature)
		mark = &b.cacheMark
	case *redactedThinkingBlock:
		if b == nil {
			return append(dst, "null"...), nil
		}
		dst = appendField(dst, `{"type":`, b.Type)
		dst = appendField(dst, `,"data":`, b.Data)
		mark = &b.cacheMark
	default:
		return wire.AppendValue(dst, b)
	}
	if mark.CacheControl != nil {
		dst = appendField(dst, `,"cache_control":{"type":`, mark.CacheControl.Type)
		if mark.CacheControl.TTL != "" {
			dst = appendField(dst, `,"ttl":`, mark.CacheControl.TTL)
		}
		dst = append(dst, '}')
	}
	return append(dst, '}'), nil
}

// appendField appends key (with its punctuation) and s as a JSON string.
func appendField(dst []byte, key, s string) []byte {
	return wire.AppendString(append(dst, key...), s)
}
