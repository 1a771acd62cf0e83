package catalogue

// priced is a catalogue entry with list prices (USD per million tokens).
func priced(name string, window, maxOut int, in, out, cacheRead, cacheWrite float64) Model {
	return Model{Model: name, Window: window, MaxOutput: maxOut,
		InputPerMTok: in, OutputPerMTok: out, CacheReadPerMTok: cacheRead, CacheWritePerMTok: cacheWrite,
		PriceKnown: true}
}

// openWeights is an entry whose price depends on who serves it (or nobody:
// a local server), so it is left unknown.
func openWeights(name string, window, maxOut int) Model {
	return Model{Model: name, Window: window, MaxOutput: maxOut}
}

// builtinModels is the built-in table, returned fresh on every call so no
// package-level state can be mutated.
//
// Sources (read 2026-07): list prices and windows from the provider pages as
// recorded in LiteLLM's model_prices_and_context_window.json (snapshot of
// 2026-07-24) and Anthropic's model overview pages (platform.claude.com).
// Conservative choices where sources disagree or a larger limit needs opt-in:
//   - Window is the prompt limit: GPT-5's 400K total is 272K of input.
//   - Claude Sonnet 4/4.5 and Opus 4.5 stay at 200K (1M needs a beta header).
//   - Tiered prices (Gemini 2.5 Pro and GPT-5.4 above 200K/272K) use the
//     lower tier; long-context calls cost more than Cost says.
//   - Open-weight families (Qwen, Llama) have no price and the native window
//     (Qwen3 dense: 32K without YaRN; Llama 4: the 128K most hosts serve).
//   - Where a max output is not stated separately from the window (Mistral),
//     32K is assumed.
func builtinModels() []Model {
	return []Model{
		// OpenAI. Cache writes are free (no premium), so CacheWrite is 0.
		priced("gpt-4o", 128000, 16384, 2.5, 10, 1.25, 0),
		priced("gpt-4o-mini", 128000, 16384, 0.15, 0.6, 0.075, 0),
		priced("gpt-4.1", 1047576, 32768, 2, 8, 0.5, 0),
		priced("gpt-4.1-mini", 1047576, 32768, 0.4, 1.6, 0.1, 0),
		priced("gpt-4.1-nano", 1047576, 32768, 0.1, 0.4, 0.025, 0),
		priced("o3", 200000, 100000, 2, 8, 0.5, 0),
		priced("o3-mini", 200000, 100000, 1.1, 4.4, 0.55, 0),
		priced("o3-pro", 200000, 100000, 20, 80, 0, 0),
		priced("o4-mini", 200000, 100000, 1.1, 4.4, 0.275, 0),
		priced("gpt-5", 272000, 128000, 1.25, 10, 0.125, 0),
		priced("gpt-5-mini", 272000, 128000, 0.25, 2, 0.025, 0),
		priced("gpt-5-nano", 272000, 128000, 0.05, 0.4, 0.005, 0),
		priced("gpt-5-chat", 128000, 16384, 1.25, 10, 0.125, 0),
		priced("gpt-5-codex", 272000, 128000, 1.25, 10, 0.125, 0),
		priced("gpt-5-pro", 272000, 128000, 15, 120, 0, 0),
		priced("gpt-5.1", 272000, 128000, 1.25, 10, 0.125, 0),
		priced("gpt-5.1-codex-mini", 272000, 128000, 0.25, 2, 0.025, 0),
		priced("gpt-5.2", 272000, 128000, 1.75, 14, 0.175, 0),
		priced("gpt-5.2-pro", 272000, 128000, 21, 168, 0, 0),
		priced("gpt-5.4", 1050000, 128000, 2.5, 15, 0.25, 0),
		priced("gpt-5.4-mini", 400000, 128000, 0.75, 4.5, 0.075, 0),
		priced("gpt-5.4-nano", 400000, 128000, 0.2, 1.25, 0.02, 0),
		priced("gpt-5.4-pro", 1050000, 128000, 30, 180, 3, 0),
		priced("gpt-5.5", 1050000, 128000, 5, 30, 0.5, 0),
		priced("gpt-5.5-pro", 1050000, 128000, 30, 180, 3, 0),

		// Anthropic. Cache writes are the 5-minute rate (1.25× input).
		priced("claude-opus-4-8", 1000000, 128000, 5, 25, 0.5, 6.25),
		priced("claude-opus-4-7", 1000000, 128000, 5, 25, 0.5, 6.25),
		priced("claude-opus-4-6", 1000000, 128000, 5, 25, 0.5, 6.25),
		priced("claude-opus-4-5", 200000, 64000, 5, 25, 0.5, 6.25),
		priced("claude-opus-4-1", 200000, 32000, 15, 75, 1.5, 18.75),
		priced("claude-opus-4", 200000, 32000, 15, 75, 1.5, 18.75),
		priced("claude-sonnet-4-6", 1000000, 64000, 3, 15, 0.3, 3.75),
		priced("claude-sonnet-4-5", 200000, 64000, 3, 15, 0.3, 3.75),
		priced("claude-sonnet-4", 200000, 64000, 3, 15, 0.3, 3.75),
		priced("claude-haiku-4-5", 200000, 64000, 1, 5, 0.1, 1.25),
		priced("claude-3-7-sonnet", 200000, 64000, 3, 15, 0.3, 3.75),
		priced("claude-3-5-sonnet", 200000, 8192, 3, 15, 0.3, 3.75),
		priced("claude-3-5-haiku", 200000, 8192, 0.8, 4, 0.08, 1),

		// Google Gemini (prompts up to 200K; context caching storage not priced).
		priced("gemini-2.0-flash", 1048576, 8192, 0.1, 0.4, 0.025, 0),
		priced("gemini-2.0-flash-lite", 1048576, 8192, 0.075, 0.3, 0.01875, 0),
		priced("gemini-2.5-pro", 1048576, 65535, 1.25, 10, 0.125, 0),
		priced("gemini-2.5-flash", 1048576, 65535, 0.3, 2.5, 0.03, 0),
		priced("gemini-2.5-flash-lite", 1048576, 65535, 0.1, 0.4, 0.01, 0),
		priced("gemini-3-pro", 1048576, 65535, 2, 12, 0.2, 0),
		priced("gemini-3-flash", 1048576, 65535, 0.5, 3, 0.05, 0),

		// DeepSeek API (V3.2 prices; cache miss is the input rate).
		priced("deepseek-chat", 131072, 8192, 0.28, 0.42, 0.028, 0),
		priced("deepseek-reasoner", 131072, 65536, 0.28, 0.42, 0.028, 0),

		// Qwen (open weights; "qwen-2.5" is OpenRouter's spelling).
		openWeights("qwen3", 32768, 8192),
		openWeights("qwen3-coder", 262144, 65536),
		openWeights("qwen3-next", 262144, 32768),
		openWeights("qwen3-max", 262144, 65536),
		openWeights("qwen2.5", 32768, 8192),
		openWeights("qwen2.5-coder", 32768, 8192),
		openWeights("qwen-2.5", 32768, 8192),
		openWeights("qwen-2.5-coder", 32768, 8192),

		// Llama (open weights; HF, Ollama and Together spellings).
		openWeights("llama-3.1", 131072, 8192),
		openWeights("llama3.1", 131072, 8192),
		openWeights("meta-llama-3.1", 131072, 8192),
		openWeights("llama-3.2", 131072, 8192),
		openWeights("llama3.2", 131072, 8192),
		openWeights("llama-3.3", 131072, 8192),
		openWeights("llama3.3", 131072, 8192),
		openWeights("llama-4", 131072, 8192),
		openWeights("llama4", 131072, 8192),

		// Mistral API. The undated names are the current ("-latest") models.
		priced("mistral-large", 262144, 32768, 0.5, 1.5, 0, 0),
		priced("mistral-large-2411", 131072, 32768, 2, 6, 0, 0),
		priced("mistral-large-2407", 131072, 32768, 3, 9, 0, 0),
		priced("mistral-medium", 262144, 32768, 1.5, 7.5, 0, 0),
		priced("mistral-medium-2508", 131072, 32768, 0.4, 2, 0, 0),
		priced("mistral-medium-2505", 131072, 8191, 0.4, 2, 0, 0),
		// Sources list $0.06/$0.18 and $0.10/$0.30; the higher is kept.
		priced("mistral-small", 131072, 32768, 0.1, 0.3, 0, 0),
		priced("codestral", 256000, 32768, 0.3, 0.9, 0, 0),
		priced("codestral-2405", 32000, 8191, 1, 3, 0, 0),
		priced("devstral", 262144, 32768, 0.4, 2, 0, 0),
		priced("devstral-medium", 131072, 32768, 0.4, 2, 0, 0),
		priced("devstral-small", 131072, 32768, 0.1, 0.3, 0, 0),
		priced("magistral-medium", 40000, 16384, 2, 5, 0, 0),
		priced("magistral-small", 40000, 16384, 0.5, 1.5, 0, 0),
	}
}
