package jsonnum

import (
	"encoding/json"
	"testing"
)

func TestDecodeKeepsNumbersExact(t *testing.T) {
	v, err := Decode([]byte(`{"n": 9007199254740993, "f": 3.0} trailing`))
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if m["n"] != json.Number("9007199254740993") || m["f"] != json.Number("3.0") {
		t.Fatalf("numbers not exact: %#v", m)
	}
	if _, err := Decode([]byte(`{"n":`)); err == nil {
		t.Fatal("truncated JSON decoded")
	}
}
