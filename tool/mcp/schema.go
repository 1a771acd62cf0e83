package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
)

// fixSchema turns a server's input schema into one the providers accept,
// serialized deterministically (keys sorted, compact), and lists what it
// changed. What cannot be fixed is an error naming the problem; the tool
// is then left out.
//
// Fixes: a missing root type becomes "object"; an object without
// "properties" gets empty ones; an array without "items" gets "items": {}
// (OpenAI rejects such arrays); "$schema" and "$id" are dropped (Gemini
// rejects them, and they only cost tokens); "required" names that are not
// properties are dropped.
func fixSchema(in any) (json.RawMessage, []string, error) {
	if in == nil {
		return json.RawMessage(`{"properties":{},"type":"object"}`), []string{"no input schema: an empty object schema is used"}, nil
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, nil, fmt.Errorf("input schema is not JSON: %w", err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, nil, fmt.Errorf("input schema is not JSON: %w", err)
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, nil, errors.New("input schema is not a JSON object")
	}
	var fixes []string
	switch t := root["type"].(type) {
	case nil:
		root["type"] = "object"
		fixes = append(fixes, "root type set to object")
	case string:
		if t != "object" {
			return nil, nil, fmt.Errorf("input schema root has type %q; providers require an object", t)
		}
	default:
		return nil, nil, fmt.Errorf("input schema root type is %v; providers require \"object\"", t)
	}
	for _, k := range []string{"$schema", "$id"} {
		if _, ok := root[k]; ok {
			delete(root, k)
			fixes = append(fixes, "dropped "+k)
		}
	}
	walkSchema(root, "", &fixes)
	out, err := json.Marshal(root) // maps marshal with sorted keys
	if err != nil {
		return nil, nil, fmt.Errorf("input schema: %w", err)
	}
	return out, fixes, nil
}

// walkSchema applies the fixes to s and every schema below it.
func walkSchema(s map[string]any, at string, fixes *[]string) {
	if hasType(s, "object") {
		props, ok := s["properties"].(map[string]any)
		if !ok {
			if _, exists := s["properties"]; !exists {
				props = map[string]any{}
				s["properties"] = props
				if at != "" {
					*fixes = append(*fixes, at+": added empty properties")
				}
			}
		}
		if req, ok := s["required"].([]any); ok && props != nil {
			kept := req[:0:0]
			for _, r := range req {
				if name, ok := r.(string); ok {
					if _, ok := props[name]; ok {
						kept = append(kept, r)
						continue
					}
				}
				*fixes = append(*fixes, fmt.Sprintf("%s: dropped required %v (not a property)", pathOr(at), r))
			}
			if len(kept) == 0 {
				delete(s, "required")
			} else {
				s["required"] = kept
			}
		}
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if sub, ok := props[k].(map[string]any); ok {
				walkSchema(sub, at+"/properties/"+k, fixes)
			}
		}
		if sub, ok := s["additionalProperties"].(map[string]any); ok {
			walkSchema(sub, at+"/additionalProperties", fixes)
		}
	}
	if hasType(s, "array") {
		switch items := s["items"].(type) {
		case nil:
			s["items"] = map[string]any{}
			*fixes = append(*fixes, pathOr(at)+": array without items got items {}")
		case map[string]any:
			walkSchema(items, at+"/items", fixes)
		}
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if list, ok := s[k].([]any); ok {
			for i, x := range list {
				if sub, ok := x.(map[string]any); ok {
					walkSchema(sub, fmt.Sprintf("%s/%s/%d", at, k, i), fixes)
				}
			}
		}
	}
	for _, k := range []string{"$defs", "definitions"} {
		if defs, ok := s[k].(map[string]any); ok {
			for name, x := range defs {
				if sub, ok := x.(map[string]any); ok {
					walkSchema(sub, at+"/"+k+"/"+name, fixes)
				}
			}
		}
	}
}

func hasType(s map[string]any, want string) bool {
	switch t := s["type"].(type) {
	case string:
		return t == want
	case []any:
		for _, x := range t {
			if x == want {
				return true
			}
		}
	}
	return false
}

func pathOr(at string) string {
	if at == "" {
		return "root"
	}
	return at
}
