package openai

import "github.com/talaria-agent/talaria/llm"

// mapUsage normalizes a usage object: the provider's prompt_tokens counts
// cached and cache-written tokens too, llm.Usage keeps them apart.
func mapUsage(w *wireUsage) llm.Usage {
	u := llm.Usage{
		OutputTokens: w.CompletionTokens,
		Reported:     true,
	}
	if d := w.PromptTokensDetails; d != nil {
		u.CacheReadTokens = d.CachedTokens
		u.CacheWriteTokens = d.CacheWriteTokens
	}
	if u.CacheReadTokens == 0 && w.PromptCacheHitTokens != nil {
		u.CacheReadTokens = *w.PromptCacheHitTokens
	}
	if d := w.CompletionTokensDetails; d != nil {
		u.ReasoningTokens = d.ReasoningTokens
	}
	u.InputTokens = max(w.PromptTokens-u.CacheReadTokens-u.CacheWriteTokens, 0)
	return u
}

// mapFinish maps a raw finish_reason. Besides OpenAI's own values it knows
// the few that proxies forward from other APIs; anything else is
// FinishUnknown, and the caller keeps the raw text.
func mapFinish(raw string) llm.FinishReason {
	switch raw {
	case "stop", "end_turn", "stop_sequence", "eos":
		return llm.FinishStop
	case "tool_calls", "function_call", "tool_use":
		return llm.FinishToolCalls
	case "length", "max_tokens":
		return llm.FinishLength
	case "content_filter":
		return llm.FinishContentFilter
	default:
		return llm.FinishUnknown
	}
}
