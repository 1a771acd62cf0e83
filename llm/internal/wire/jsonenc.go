package wire

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// JSONEncoder encodes request bodies and their parts the way every adapter
// sends them: no HTML escaping (prompts and tool schemas are full of <, >
// and &; escaping only adds bytes) and no trailing newline. It reuses one
// buffer, so the bytes Encode returns are valid until its next call.
type JSONEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// Encode encodes v; the result is overwritten by the next Encode.
func (e *JSONEncoder) Encode(v any) ([]byte, error) {
	if e.enc == nil {
		e.enc = json.NewEncoder(&e.buf)
		e.enc.SetEscapeHTML(false)
	}
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(e.buf.Bytes(), []byte("\n")), nil
}

// MarshalJSON encodes v like JSONEncoder into a fresh slice.
func MarshalJSON(v any) ([]byte, error) {
	var e JSONEncoder
	return e.Encode(v)
}

// AppendField appends key, written with its punctuation (`,"name":`), and
// s as a JSON string: one string field of a hand-written encoder.
func AppendField(dst []byte, key, s string) []byte {
	return AppendString(append(dst, key...), s)
}

// AppendString appends s as a JSON string exactly as JSONEncoder writes it
// (encoding/json without HTML escaping): \" \\ \n \r \t \b \f, other
// control characters as \u00XX, invalid UTF-8 as \ufffd, U+2028 and U+2029
// escaped, everything else as is. The adapters' hand-written message
// encoders build on it; their fuzz tests hold it to encoding/json.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if plain[b] == 1 {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(append(dst, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(append(dst, s[start:]...), '"')
}

// plain marks (1) the ASCII bytes AppendString copies as they are: all
// but the control characters, '"' and '\\'. A constant, so it is a table
// without package state.
const plain = "" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x01\x01\x00\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01" + // '"' is 0x22
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01" +
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01" +
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x00\x01\x01\x01" + // '\\' is 0x5c
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01" +
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01"

const hexDigits = "0123456789abcdef"

// AppendValue appends v as JSONEncoder encodes it: the hand-written
// encoders' way out for values they do not spell themselves.
func AppendValue(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return AppendString(dst, v), nil
	}
	b, err := MarshalJSON(v)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}
