package sqlrows

import (
	"fmt"
	"testing"

	"github.com/talaria-agent/talaria/llm"
)

func TestCompactContentEncoding(t *testing.T) {
	tests := []struct {
		name     string
		parts    []llm.Part
		wantJSON bool
	}{
		{"none", nil, false},
		{"one text", []llm.Part{llm.TextPart("hi")}, false},
		{"one empty text", []llm.Part{llm.TextPart("")}, true},
		{"two texts", []llm.Part{llm.TextPart("a"), llm.TextPart("b")}, true},
		{"image", []llm.Part{{Type: llm.PartImage, URL: "u"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			content, text, err := EncodeContent(tt.parts)
			if err != nil {
				t.Fatal(err)
			}
			if (content != nil) != tt.wantJSON {
				t.Fatalf("content column = %v, want JSON %v", content, tt.wantJSON)
			}
			got, err := DecodeContent(content, text)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", tt.parts) {
				t.Fatalf("round trip = %#v, want %#v", got, tt.parts)
			}
		})
	}
}
