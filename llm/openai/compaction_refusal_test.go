package openai

import (
	"testing"

	"github.com/talaria-agent/talaria/llm"
)

// Only a 400 that names context_management and rejects it turns native
// compaction off: a body that merely echoes the request does not.
func TestContextManagementRejected(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   bool
	}{
		{"unknown parameter", 400, `{"error":{"message":"Unknown parameter: 'context_management'.","param":"context_management","code":"unknown_parameter"}}`, true},
		{"unsupported", 400, `{"error":{"message":"context_management is not supported for this model"}}`, true},
		{"a 400 that only echoes the request", 400, `{"error":{"message":"Request {\"model\":\"gpt-5.5\",\"context_management\":[{\"type\":\"compaction\"}]} exceeded the organization's token budget for the hour"}}`, false},
		{"a 500 echoing the request", 500, `{"error":{"message":"upstream failed: unsupported state for context_management"}}`, false},
		{"a 502 page", 502, `<html>Bad Gateway</html>`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := &llm.APIError{StatusCode: tc.status, Body: []byte(tc.body)}
			if got := contextManagementRejected(e); got != tc.want {
				t.Errorf("rejected = %v, want %v", got, tc.want)
			}
		})
	}
}
