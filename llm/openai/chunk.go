package openai

import "encoding/json"

// wireChunk is one streamed chat.completion.chunk, or a whole non-streamed
// chat.completion (whose choices carry message instead of delta). Only the
// fields Talaria reads are declared; compatible servers add many others.
type wireChunk struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Choices []wireChoice    `json:"choices"`
	Usage   *wireUsage      `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type wireChoice struct {
	Index        int        `json:"index"`
	Delta        wireDelta  `json:"delta"`
	Message      *wireDelta `json:"message"`
	FinishReason *string    `json:"finish_reason"`
}

// wireDelta is the incremental (or, in a non-streamed answer, complete)
// assistant message.
type wireDelta struct {
	Content string `json:"content"`
	Refusal string `json:"refusal"`
	// ReasoningContent is DeepSeek's and older vLLM's name for thinking
	// text; Reasoning is OpenRouter's and newer vLLM's.
	ReasoningContent string              `json:"reasoning_content"`
	Reasoning        string              `json:"reasoning"`
	ToolCalls        []wireToolCallDelta `json:"tool_calls"`
}

type wireToolCallDelta struct {
	// Index is a pointer because some servers omit it; see
	// assembler.resolveIndex.
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type wireUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
		// CacheWriteTokens is reported by OpenRouter for providers that
		// bill cache writes (Anthropic).
		CacheWriteTokens int64 `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	// PromptCacheHitTokens is DeepSeek's cache counter, sent instead of
	// prompt_tokens_details.
	PromptCacheHitTokens *int64 `json:"prompt_cache_hit_tokens"`
}

// hasError reports whether the chunk is an error object rather than content
// (OpenRouter and vLLM send `data: {"error": {...}}` mid-stream).
func (c *wireChunk) hasError() bool {
	return len(c.Error) > 0 && string(c.Error) != "null"
}
