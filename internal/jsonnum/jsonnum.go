// Package jsonnum decodes JSON into generic values with numbers kept exact
// (json.Number), for readers that compare or bound numbers they did not
// define: tool arguments checked against a schema, provider error bodies.
package jsonnum

import (
	"bytes"
	"encoding/json"
)

// Decode decodes the first JSON value of b. Numbers are json.Number, so an
// integer bound or a large id suffers no float rounding; what follows the
// first value is not read.
func Decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}
