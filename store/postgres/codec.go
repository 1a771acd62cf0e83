package postgres

import (
	"encoding/json"
	"fmt"

	"github.com/talaria-agent/talaria/llm"
)

// Content is stored as in store/sqlite: the common case, exactly one plain
// non-empty text part, lives only in the text column (content NULL); no
// parts is NULL with empty text; everything else is the JSON of the parts.

func encodeContent(parts []llm.Part) (content []byte, text string, err error) {
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

func decodeContent(content []byte, text string) ([]llm.Part, error) {
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

// encodeJSON returns nil (NULL) for a nil value, the JSON otherwise.
func encodeToolCalls(calls []llm.ToolCall) ([]byte, error) {
	if len(calls) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(calls)
	if err != nil {
		return nil, fmt.Errorf("encode tool calls: %w", err)
	}
	return b, nil
}

func encodeReasoning(r *llm.Reasoning) ([]byte, error) {
	if r == nil {
		return nil, nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode reasoning: %w", err)
	}
	return b, nil
}

// nonNil makes an empty payload an empty bytea rather than NULL, for the
// NOT NULL columns.
func nonNil(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return []byte(s)
}
