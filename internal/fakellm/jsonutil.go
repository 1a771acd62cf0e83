package fakellm

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"
)

// validUTF8 reports whether b is valid UTF-8. encoding/json would quietly
// replace bad bytes with U+FFFD, and a real API rejects them.
func validUTF8(b []byte) bool { return utf8.Valid(b) }

// isTypeError reports whether err is a JSON value of the wrong type (the
// body itself parsed), as opposed to a syntax error.
func isTypeError(err error) bool {
	var te *json.UnmarshalTypeError
	return errors.As(err, &te)
}

// isAbsent reports whether a field was missing or null.
func isAbsent(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

// rawString decodes a JSON string field, "" for anything else.
func rawString(raw json.RawMessage) string {
	var s string
	if isAbsent(raw) || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// joinText reads content that is a JSON string or a list of T: the string,
// or the text of each element, joined. text may refuse an element; the text
// so far comes back with its error. A list that does not decode fails with
// badList's error.
func joinText[T any](raw json.RawMessage, badList func(error) error, text func(T) (string, error)) (string, error) {
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var list []T
	if err := json.Unmarshal(raw, &list); err != nil {
		return "", badList(err)
	}
	var b strings.Builder
	for _, el := range list {
		t, err := text(el)
		if err != nil {
			return b.String(), err
		}
		b.WriteString(t)
	}
	return b.String(), nil
}

// mustJSON marshals values built by this package, which always marshal.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("fakellm: marshal: " + err.Error())
	}
	return b
}
