package llm

import (
	"bytes"
	"encoding/json"
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
