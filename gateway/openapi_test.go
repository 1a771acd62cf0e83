package gateway

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestOpenAPICoversRoutes holds the published spec against the route
// table: every authenticated /v1 route is documented with its method, and
// the spec documents no /v1 route that does not exist.
func TestOpenAPICoversRoutes(t *testing.T) {
	var spec struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapiSpec, &spec); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	inCode := map[string]bool{}
	for _, rt := range (&Gateway{}).apiRoutes() {
		method, path, ok := strings.Cut(rt.pattern, " ")
		if !ok {
			t.Fatalf("route %q has no method", rt.pattern)
		}
		key := strings.ToLower(method) + " " + path
		inCode[key] = true
		if _, ok := spec.Paths[path][strings.ToLower(method)]; !ok {
			t.Errorf("openapi.json lacks %s", key)
		}
	}
	for path, ops := range spec.Paths {
		if !strings.HasPrefix(path, "/v1/") {
			continue
		}
		for method := range ops {
			switch method {
			case "get", "post", "put", "patch", "delete":
				if !inCode[method+" "+path] {
					t.Errorf("openapi.json documents %s %s, which no route serves", method, path)
				}
			}
		}
	}
	for _, want := range []string{"post /v1/chat/completions", "post /v1/responses", "get /v1/models"} {
		if !inCode[want] {
			t.Errorf("route table lacks %s", want)
		}
	}
}
