package sqlrows

import (
	"encoding/json"
	"fmt"

	"github.com/talaria-agent/talaria/llm"
)

// Content is stored compactly: the common case, exactly one plain non-empty
// text part, lives only in the text column (content NULL), which spares a
// JSON round trip on almost every row of a long transcript. No parts is
// NULL with empty text; everything else (images, several parts, an empty
// text part) is the JSON of the parts.

// EncodeContent returns the content column (nil for NULL) and the plain text.
func EncodeContent(parts []llm.Part) (content []byte, text string, err error) {
	text = llm.Message{Content: parts}.Text()
	if len(parts) == 0 || (len(parts) == 1 && plainText(parts[0])) {
		return nil, text, nil
	}
	b, err := json.Marshal(parts)
	if err != nil {
		return nil, "", fmt.Errorf("encode content: %w", err)
	}
	return b, text, nil
}

func plainText(p llm.Part) bool {
	return p.Type == llm.PartText && p.Text != "" && p.MediaType == "" && p.Data == nil && p.URL == ""
}

// DecodeContent reverses EncodeContent; content nil is NULL.
func DecodeContent(content []byte, text string) ([]llm.Part, error) {
	if content == nil {
		if text == "" {
			return nil, nil
		}
		return []llm.Part{llm.TextPart(text)}, nil
	}
	var parts []llm.Part
	if err := json.Unmarshal(content, &parts); err != nil {
		return nil, fmt.Errorf("decode content: %w", err)
	}
	return parts, nil
}

// EncodeToolCalls is the tool_calls column: nil (NULL) when there are none.
func EncodeToolCalls(calls []llm.ToolCall) ([]byte, error) {
	if len(calls) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(calls)
	if err != nil {
		return nil, fmt.Errorf("encode tool calls: %w", err)
	}
	return b, nil
}

// EncodeReasoning is the reasoning column: nil (NULL) when absent.
func EncodeReasoning(r *llm.Reasoning) ([]byte, error) {
	if r == nil {
		return nil, nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode reasoning: %w", err)
	}
	return b, nil
}
