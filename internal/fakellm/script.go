package fakellm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"
)

// LoadScript reads a JSON array of steps. Unknown fields are an error, so a
// typo in a script file does not silently become a plain text step.
// Durations are nanoseconds or Go duration strings ("1.5s").
func LoadScript(r io.Reader) ([]Step, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var steps []Step
	if err := dec.Decode(&steps); err != nil {
		return nil, fmt.Errorf("fakellm: load script: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("fakellm: load script: trailing data after the step array")
	}
	return steps, nil
}

// scriptDuration accepts a number of nanoseconds or a duration string.
type scriptDuration time.Duration

func (d *scriptDuration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		s, err := strconv.Unquote(string(b))
		if err != nil {
			return fmt.Errorf("duration %s: %w", b, err)
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: %w", s, err)
		}
		*d = scriptDuration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration %s: %w", b, err)
	}
	*d = scriptDuration(n)
	return nil
}

// UnmarshalJSON decodes a step, accepting duration strings for latency and
// chunk_delay.
func (s *Step) UnmarshalJSON(b []byte) error {
	// stepFields has Step's fields but not its methods, so decoding into it
	// does not recurse; the shadowing fields take the durations.
	type stepFields Step
	var aux struct {
		stepFields
		Latency    scriptDuration `json:"latency,omitempty"`
		ChunkDelay scriptDuration `json:"chunk_delay,omitempty"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&aux); err != nil {
		return err
	}
	*s = Step(aux.stepFields)
	s.Latency = time.Duration(aux.Latency)
	s.ChunkDelay = time.Duration(aux.ChunkDelay)
	return nil
}
