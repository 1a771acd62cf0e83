package failover

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
)

// testNow is the fixed clock of the classification tests.
func testNow() time.Time { return time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC) }

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

type classifyCase struct {
	name  string
	in    Input
	want  Class
	check func(t *testing.T, c Classified)
}

func wantUncertain(t *testing.T, c Classified) {
	t.Helper()
	if c.Certain {
		t.Errorf("Certain = true, want a best-guess verdict")
	}
}

func wantFallback(want bool) func(*testing.T, Classified) {
	return func(t *testing.T, c Classified) {
		t.Helper()
		if c.Fallback != want {
			t.Errorf("Fallback = %v, want %v", c.Fallback, want)
		}
	}
}

func wantCap(limit int) func(*testing.T, Classified) {
	return func(t *testing.T, c Classified) {
		t.Helper()
		if c.OutputCapLimit != limit {
			t.Errorf("OutputCapLimit = %d, want %d", c.OutputCapLimit, limit)
		}
	}
}

func wantRetryAfter(d time.Duration) func(*testing.T, Classified) {
	return func(t *testing.T, c Classified) {
		t.Helper()
		if c.RetryAfter != d {
			t.Errorf("RetryAfter = %v, want %v", c.RetryAfter, d)
		}
	}
}

func all(checks ...func(*testing.T, Classified)) func(*testing.T, Classified) {
	return func(t *testing.T, c Classified) {
		t.Helper()
		for _, ch := range checks {
			ch(t, c)
		}
	}
}

// Status-less texts and bodies collected for issue 11, each with where it
// was found.
var (
	// waylaidwanderer/node-chatgpt-api#66.
	nodeENOTFOUND = "FetchError: request to https://api.openai.com/v1/completions failed, reason: getaddrinfo ENOTFOUND api.openai.com"
	// Chanzhaoyu/chatgpt-web#1323.
	nodeEAIAGAIN = "request to https://api.openai.com/v1/chat/completions failed, reason: getaddrinfo EAI_AGAIN api.openai.com"
	// Node's net error text (nodejs.org/api/errors.html, ECONNREFUSED).
	nodeECONNREFUSED = "Error: connect ECONNREFUSED 127.0.0.1:11434"
	// Node's net error text (nodejs.org/api/errors.html, ECONNRESET).
	nodeECONNRESET = "Error: read ECONNRESET"
	// Node 18+ fetch (undici) refusing to connect.
	undiciFetchFailed = "TypeError: fetch failed"
	// requests/urllib3 behind a broken resolver.
	pyNameResolution = "HTTPSConnectionPool(host='api.openai.com', port=443): Max retries exceeded with url: /v1/chat/completions (Caused by NameResolutionError(\"<urllib3.connection.HTTPSConnection object>: Failed to resolve 'api.openai.com' ([Errno -3] Temporary failure in name resolution)\"))"
	pyNameNotKnown   = "[Errno -2] Name or service not known"
	goNoRoute        = "dial tcp 10.0.0.7:8000: connect: no route to host"
	goUnreachable    = "dial tcp [2606:4700::6810:7b2a]:443: connect: network is unreachable"
	// ollama/ollama-python#436.
	httpxDisconnected = "httpcore.RemoteProtocolError: Server disconnected without sending a response."
	// Kilo-Org/kilocode#12543, envoyproxy/envoy#9747.
	envoyReset = "upstream connect error or disconnect/reset before headers. reset reason: connection termination"
	goDeadline = "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
	// openai-node's APIConnectionTimeoutError text.
	nodeTimedOut = "Request timed out after 600000ms."
	// HanaokaYuzu/Gemini-API#135.
	pyBadRecordMAC = "[SSL: DECRYPTION_FAILED_OR_BAD_RECORD_MAC] decryption failed or bad record mac (_ssl.c:2570)"
	// mistralai/mistral-vibe#508.
	pyAlertBadRecordMAC = "API error from mistral (model: mistral-vibe-cli-latest): [SSL: SSLV3_ALERT_BAD_RECORD_MAC] ssl/tls alert bad record mac (_ssl.c:2580)"
	pyUnexpectedEOF     = "[SSL: UNEXPECTED_EOF_WHILE_READING] EOF occurred in violation of protocol (_ssl.c:1007)"
	pyCertFailed        = "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer certificate (_ssl.c:1006)"
	// continuedev/continue#9592.
	bedrockTooLong = "The model returned the following errors: Input is too long for requested model."
	// anomalyco/opencode#44889.
	litellmWindow = "ContextWindowExceededError: litellm.BadRequestError: Context Window exceeded for given call. No models have context window large enough for this call."
	// BerriAI/litellm#15968.
	azureInputLimit = "AzureException BadRequestError - Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 509178 tokens. Please reduce the length of the messages."
	// BerriAI/litellm#10793.
	sglangContext = "The input (5000 tokens) is longer than the model's context length (4096 tokens)."
	// langchain-ai/langchain-aws#419.
	bedrockPayload = "ValidationException: An error occurred (ValidationException) when calling the InvokeModel operation: 1 validation error detected: Value at 'body' failed to satisfy constraint: Member must have length less than or equal to 25000000 (request entity too large)"
	// OpenRouter's 401 (openrouter.ai/docs errors).
	orNoAuth = `{"error":{"message":"No auth credentials found","code":401}}`

	// router-for-me/CLIProxyAPI#1666, Biliniko/cpa-control-center#5.
	codexUsageLimit = `{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"free","resets_in_seconds":529498}}`
	// MiniMax-AI/MiniMax-M2.7#36.
	minimaxUsageLimit = `{"type":"error","error":{"type":"rate_limit_error","message":"usage limit exceeded, 5-hour usage limit reached for Token Plan Starter (0/0 used), resets at 2026-05-15T15:00:00Z (2056)"},"request_id":"065651beccc4579e5c7e66c939d1987e"}`
	// anthropics/claude-code#8132.
	anthAPIOverloaded = `{"type":"error","error":{"type":"api_error","message":"Overloaded"},"request_id":null}`
	// vllm-project/vllm#20409 (the ValueError text); tenstorrent/vllm#35
	// (served as a 500).
	vllm500Context = `{"object":"error","message":"This model's maximum context length is 16384 tokens. However, you requested 122946 tokens (112946 in the messages, 10000 in the completion). Please reduce the length of the messages or completion.","type":"InternalServerError","param":null,"code":500}`
	// OpenHands/OpenHands#5350 (litellm's proxy body).
	litellmWrappedOverflow = `{"error":{"message":"litellm.BadRequestError: litellm.ContextWindowExceededError: AnthropicError - {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: 209303 tokens > 200000 maximum\"}}","type":null,"param":null,"code":"500"}}`
	// Azure OpenAI's missing deployment (learn.microsoft.com, Azure OpenAI error codes).
	azureDeployment = `{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."}}`
	// anthropics/claude-code#27944.
	anthLongContext = `{"type":"error","error":{"type":"invalid_request_error","message":"The long context beta is not yet available for this subscription."},"request_id":"req_011CYRQ9cQJjTy2DHBkbPsQD"}`
	// lijunzh/koda#813 (LM Studio / Ollama wording), hiyouga/LlamaFactory#5918.
	lmStudioNoImages = `{"error":"This model does not support image input."}`
	// Wei-Shaw/sub2api#6899.
	sub2apiNoImages = `{"error":{"message":"此模型不支持图像输入。请尝试其他模型","type":"invalid_request_error"}}`
	// sigoden/aichat#1100, skye-harris/hass_local_openai_llm#15.
	ollamaPageNotFound = "404 page not found"
	// vybestack/llxprt-code#775.
	ollamaPageNotFoundJSON = `{"error":{"message":"404 page not found","code":404,"status":"Not Found"}}`
	// tsundereraws/aisub-translator#2.
	nginx404 = "<html>\n<head><title>404 Not Found</title></head>\n<body>\n<center><h1>404 Not Found</h1></center>\n<hr><center>nginx</center>\n</body>\n</html>"
)

// Real error bodies, each with where it was found. Sources are public issue
// threads and provider docs quoting the provider's own answer.
var (
	// openai/openai-python and countless reports; code invalid_api_key.
	openAIBadKey = `{"error":{"message":"Incorrect API key provided: sk-proj-****abcd. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
	// ChatGPTNextWeb/NextChat#3123.
	openAIQuota = `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`
	// ayaka14732/ChatGPTAPIFree#16 (older shape, code null).
	openAIQuotaNullCode = `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":null}}`
	// openai/codex#88.
	openAIRateLimit = `{"error":{"message":"Rate limit reached for o4-mini in organization org-xxxx on tokens per min (TPM): Limit 200000, Used 162960, Requested 42288. Please try again in 1.574s. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`
	// mckaywrigley/chatbot-ui#102.
	openAIContext = `{"error":{"message":"This model's maximum context length is 4097 tokens. However, you requested 4120 tokens (3120 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`
	// ChatGPTNextWeb/NextChat#3195, enoch3712/ExtractThinker#346.
	openAIMaxTokens = `{"error":{"message":"max_tokens is too large: 50000. This model supports at most 16384 completion tokens, whereas you provided 50000.","type":"invalid_request_error","param":"max_tokens","code":null}}`
	// microsoft/vscode-copilot-release#8065, fish2018/YPrompt#26.
	openAIUnsupported = `{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}`
	// OpenAI's model_not_found answer.
	openAIModel = "{\"error\":{\"message\":\"The model `gpt-5-turbo` does not exist or you do not have access to it.\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"model_not_found\"}}"
	// openai/codex#8145.
	openAIEncrypted = `{"error":{"message":"The encrypted content gAAA...DQ== could not be verified.","type":"invalid_request_error","param":null,"code":"invalid_encrypted_content"}}`
	// OpenHands/OpenHands#7700.
	openAIToolImage = `{"error":{"message":"Invalid 'messages[234]'. Image URLs are only allowed for messages with role 'user', but this message with role 'tool' contains an image URL.","type":"invalid_request_error","param":"messages.[234].content.[1].type","code":"invalid_value"}}`
	// OpenAI reasoning models' prompt filter.
	openAIInvalidPrompt = `{"error":{"message":"Invalid prompt: your prompt was flagged as potentially violating our usage policy. Please try again with a different prompt: https://platform.openai.com/docs/guides/reasoning#advice-on-prompting","type":"invalid_request_error","param":null,"code":"invalid_prompt"}}`
	// Strict function-calling schema rejection.
	openAIToolSchema = `{"error":{"message":"Invalid schema for function 'read_file': In context=(), 'required' is required to be supplied and to be an array including every key in properties. Missing 'path'.","type":"invalid_request_error","param":"tools[0].function.parameters","code":"invalid_function_parameters"}}`
	// OpenAI json_object mode without the word "json".
	openAIValidation = `{"error":{"message":"'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.","type":"invalid_request_error","param":"messages","code":null}}`
	// OpenAI 500 / 503 wording.
	openAIServer     = `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`
	openAIOverloaded = `{"error":{"message":"The server is overloaded or not ready yet.","type":"server_error","param":null,"code":null}}`
	// OpenAI's inactive-billing 429.
	openAIBillingInactive = `{"error":{"message":"Your account is not active, please check your billing details on our website.","type":"billing_not_active","param":null,"code":"billing_not_active"}}`

	// Anthropic: docs.claude.com/en/api/errors (error shapes, types).
	anthOverloaded = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`
	// FoundationAgents/OpenManus#746 (message), Anthropic docs (shape).
	anthRateLimit = `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 20,000 input tokens per minute. For details, refer to: https://docs.anthropic.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later."}}`
	anthAPIError  = `{"type":"error","error":{"type":"api_error","message":"Internal server error"},"request_id":"req_011CT8YPUqqcs9Q9E9ZxZKBn"}`
	anthAuth      = `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_011CUdL49e3Fu9bCKbWF6cXD"}`
	anthPerm      = `{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}`
	anthNotFound  = `{"type":"error","error":{"type":"not_found_error","message":"model: claude-3-opus-latest"},"request_id":"req_011CNNrvWE8h6Ywxpt5djaNA"}`
	anthTooLarge  = `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`
	// anthropics/claude-code#39534.
	anthPromptLong = `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 207368 tokens > 200000 maximum"},"request_id":"req_011CZS5W85Zp4arFkumimgmC"}`
	// OpenHands/OpenHands#11090 (wording); limits per the brief.
	anthMaxTokens = `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 64001 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5-20250929"}}`
	// Anthropic's input+max_tokens form, as handled by litellm-style proxies.
	anthSumCap = "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length or `max_tokens` and try again\"}}"
	// ProfSynapse/nexus#17.
	anthBudget = "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size\"}}"
	// anthropics/claude-code#66314.
	anthCredit = `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."},"request_id":"req_011CbrFTcXhtiMzr3s6EocF7"}`
	// anthropics/claude-code#45046.
	anthExtraUsage = `{"type":"error","error":{"type":"invalid_request_error","message":"You're out of extra usage. Add more at claude.ai/settings/usage and keep going."},"request_id":"req_011CZqpKrzn59RBAo9o9ck3C"}`
	// anthropics/claude-code#10627.
	anthSignature = "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"messages.1.content.0: Invalid `signature` in `thinking` block\"},\"request_id\":\"req_011CUdL49e3Fu9bCKbWF6cXD\"}"
	// lbjlaq/Antigravity-Manager#139 (Anthropic body relayed by Vertex).
	anthThinkingFirst = "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"messages.129.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`. When `thinking` is enabled, a final `assistant` message must start with a thinking block.\"}}"
	// anthropics/claude-code#8646.
	anthImage = `{"type":"error","error":{"type":"invalid_request_error","message":"Could not process image"},"request_id":"req_011CTgc3ByJxuiQvRq4YUdjJ"}`
	// anthropics/claude-code#19631.
	anthImageBig = `{"type":"error","error":{"type":"invalid_request_error","message":"messages.2.content.0.image.source.base64: image exceeds 5 MB maximum: 8259148 bytes > 5242880 bytes"},"request_id":"req_011CXKmJsXLyKCAJCQBNzbJZ"}`
	// anthropics/claude-code#4778.
	anthImageDims = `{"type":"error","error":{"type":"invalid_request_error","message":"messages.7.content.2.image.source.base64.data: At least one of the image dimensions exceed max allowed size: 8000 pixels"}}`
	// Anthropic's alternation rule.
	anthRoles = `{"type":"error","error":{"type":"invalid_request_error","message":"messages: roles must alternate between \"user\" and \"assistant\", but found multiple \"user\" roles in a row"}}`

	// OpenRouter: open-webui/computer#293.
	orUpstreamText = `{"error":{"message":"Provider returned error","code":429,"metadata":{"raw":"z-ai/glm-5.3-flash is temporarily rate-limited upstream. Please retry shortly, or add your own key to accumulate your rate limits: https://openrouter.ai/settings/integrations","provider_name":"BaseTen","limit_source":"upstream_provider_shared_pool"}}}`
	// openrouter.ai/docs GenerationContentErrorAttempt example (raw upstream JSON).
	orUpstreamJSON = `{"error":{"message":"Provider returned error","code":429,"metadata":{"raw":"{\"error\":{\"code\":429,\"message\":\"Resource exhausted\"}}","provider_name":"Google"}}}`
	// Seed 002 (#72283): an upstream output-cap rejection relayed in a 429.
	orWrappedCap = `{"error":{"message":"Provider returned error","code":429,"metadata":{"raw":"{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"max_tokens: 128000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-20250514\"}}","provider_name":"Anthropic"}}}`
	// ding113/claude-code-hub#518 (a gateway relaying Anthropic via upstream_error).
	hubSignature = "{\"type\":\"error\",\"error\":{\"type\":\"request_fail\",\"upstream_error\":{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"messages.1.content.0: Invalid `signature` in `thinking` block\"},\"request_id\":\"req_011CWkB65DcNzK2MiofhXx8b\"}},\"request_id\":\"req_011CWkB65DcNzK2MiofhXx8b\"}"
	// unoplat/unoplat-code-confluence#1080.
	orDataPolicy = `{"error":{"message":"No endpoints found matching your data policy (Paid model training). Configure: https://openrouter.ai/settings/privacy","code":404}}`
	// openrouter.ai/docs/api/reference/errors-and-debugging (402).
	orCredits = `{"error":{"message":"This request requires more credits, or fewer max_tokens. You requested up to 65536 tokens, but can only afford 9380. To increase, visit https://openrouter.ai/settings/credits and upgrade to a paid account","code":402}}`
	// Gitlawb/openclaude#936: a daily free-model limit that names its reset.
	orFreeDaily = `{"error":{"message":"Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day","code":429,"metadata":{"headers":{"X-RateLimit-Limit":"50","X-RateLimit-Remaining":"0","X-RateLimit-Reset":"1773532800000"},"provider_name":null}}}`
	// openrouter.ai/docs errors-and-debugging, moderation errors (403).
	orModeration = `{"error":{"message":"anthropic/claude-3-opus requires moderation on OpenRouter. Your input was flagged for \"harassment\"","code":403,"metadata":{"reasons":["harassment"],"flagged_input":"...","provider_name":"Anthropic","model_slug":"anthropic/claude-3-opus"}}}`
	// musistudio/claude-code-router#1238 (inner body).
	orReasoning = `{"error":{"message":"Reasoning is mandatory for this endpoint and cannot be disabled.","code":400,"metadata":{"provider_name":null}}}`
	// musistudio/claude-code-router#1238 (as relayed by the router, upstream JSON inside the message).
	routerReasoning = `{"error":{"message":"Error from provider(openrouter,stepfun/step-3.5-flash:free: 400): {\"error\":{\"message\":\"Reasoning is mandatory for this endpoint and cannot be disabled.\",\"code\":400,\"metadata\":{\"provider_name\":null}}}Error: Error from provider","type":"api_error","code":"provider_response_error"}}`

	// Azure OpenAI: Azure/azure-sdk-for-go#23936.
	azureFilter = `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry. To learn more about our content filtering policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":false,"severity":"safe"},"jailbreak":{"filtered":false,"detected":false},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":true,"severity":"medium"}}}}}`
	// Azure OpenAI's token-rate 429 (mentions "quota" and "pricing tier", yet says when to retry).
	azureRate = `{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-02-01 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit."}}`
	// Azure OpenAI's 401.
	azureAuth = `{"error":{"code":"401","message":"Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}}`

	// Gemini OpenAI-compatible endpoint: n4ze3m/page-assist#406.
	geminiExhausted = `[{
  "error": {
    "code": 429,
    "message": "Resource has been exhausted (e.g. check quota).",
    "status": "RESOURCE_EXHAUSTED"
  }
}
]`
	// browserbase/mcp-server-browserbase#129.
	geminiQuotaRetry = `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. \n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_paid_tier_input_token_count, limit: 4000000\nPlease retry in 47.434392449s.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_paid_tier_input_token_count","quotaId":"GenerateContentPaidTierInputTokensPerModelPerMinute"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"47s"}]}}`
	// continuedev/continue#8516.
	geminiBadKey = `[{
  "error": {
    "code": 400,
    "message": "API key not valid. Please pass a valid API key.",
    "status": "INVALID_ARGUMENT",
    "details": [
      {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "API_KEY_INVALID",
        "domain": "googleapis.com",
        "metadata": {"service": "generativelanguage.googleapis.com"}
      }
    ]
  }
}
]`
	// lbjlaq/Antigravity-Manager#498 (Anthropic's body inside Vertex's message).
	vertexSignature = "{\"error\":{\"code\":400,\"message\":\"{\\\"type\\\":\\\"error\\\",\\\"error\\\":{\\\"type\\\":\\\"invalid_request_error\\\",\\\"message\\\":\\\"messages.1.content.0: Invalid `signature` in `thinking` block\\\"},\\\"request_id\\\":\\\"req_vrtx_011CWwvKgCCu3fvjASX69zqX\\\"}\",\"status\":\"INVALID_ARGUMENT\"}}"
	// lbjlaq/Antigravity-Manager#139.
	geminiThought = `{"error":{"code":400,"message":"Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call ` + "`default_api:Task`" + ` , position 2. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.","status":"INVALID_ARGUMENT"}}`
	// Gemini's overload answer.
	geminiUnavailable = `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`
	// continuedev/continue#10560 (a client relaying Gemini's error inside its own).
	continueGemini = `{"error":{"message":"{\n  \"error\": {\n    \"code\": 429,\n    \"message\": \"Resource has been exhausted (e.g. check quota).\",\n    \"status\": \"RESOURCE_EXHAUSTED\"\n  }\n}\n","code":429,"status":"Too Many Requests"}}`

	// vLLM: ogx-ai/ogx#4534 (older top-level shape).
	vllmContext = `{"object":"error","message":"This model's maximum context length is 6048 tokens. However, you requested 6616 tokens (568 in the messages, 6048 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`
	// vLLM newer shape, quoted in a public incident write-up (max_tokens form).
	vllmMaxTokens = `{"error":{"message":"'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum context length is 4096 tokens and your request has 2778 input tokens (8000 > 4096 - 2778). None","type":"BadRequestError","param":null,"code":400}}`
	// The same form when the input alone exceeds the window.
	vllmInputFills = `{"error":{"message":"'max_tokens' or 'max_completion_tokens' is too large: 32000. This model's maximum context length is 8192 tokens and your request has 9000 input tokens (32000 > 8192 - 9000). None","type":"BadRequestError","param":null,"code":400}}`
	// vllm-project/vllm#6862.
	vllmRoles = `{"object":"error","message":"After the optional system message, conversation roles must alternate user/assistant/user/assistant/...","type":"BadRequestError","param":null,"code":400}`

	// llama.cpp server: oobabooga/textgen#7257 and ggml-org/llama.cpp#15780.
	llamaContext400 = `{"error":{"code":400,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"exceed_context_size_error","n_prompt_tokens":14429,"n_ctx":8192}}`
	llamaContext500 = `{"error":{"code":500,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"exceed_context_size_error","n_prompt_tokens":1407,"n_ctx":256}}`
	// flagdizero/jenny-android-ai-agent#2 (top-level, no "error" key).
	llamaGrammar = `{"code":400,"message":"Failed to initialize samplers: failed to parse grammar","type":"invalid_request_error"}`
	// NousResearch/hermes-agent#67349 (LM Studio, same engine, enveloped).
	lmstudioGrammar = `{"error":{"code":400,"message":"Failed to initialize samplers: failed to parse grammar","type":"invalid_request_error"}}`

	// Ollama: ollama/ollama#2230, netease-youdao/QAnything#555, and the
	// embedding/chat overflow text quoted across Ollama client issues.
	ollamaNative   = `{"error":"model \"llama2\" not found, try pulling it first"}`
	ollamaCompat   = `{"error":{"message":"model \"ollama\" not found, try pulling it first","type":"api_error","param":null,"code":null}}`
	ollamaOverflow = `{"error":"the input length exceeds the context length"}`
)

// realCases is the classification table; now is the clock of every case.
func realCases(now time.Time) []classifyCase {
	resetRFC := now.Add(90 * time.Second).Format(time.RFC3339)
	return []classifyCase{
		// OpenAI
		{name: "openai 401 invalid key", in: Input{Provider: "openai", Status: 401, Body: []byte(openAIBadKey)}, want: ClassAuth,
			check: func(t *testing.T, c Classified) {
				if !c.RotateCredential || !c.Fallback || c.Retryable {
					t.Errorf("auth flags = rotate %v fallback %v retryable %v", c.RotateCredential, c.Fallback, c.Retryable)
				}
			}},
		{name: "openai 429 insufficient_quota is billing", in: Input{Provider: "openai", Status: 429, Body: []byte(openAIQuota)}, want: ClassBilling},
		{name: "openai 429 quota with null code is billing", in: Input{Provider: "openai", Status: 429, Body: []byte(openAIQuotaNullCode)}, want: ClassBilling},
		{name: "openai 429 billing_not_active without reset hint", in: Input{Provider: "openai", Status: 429, Body: []byte(openAIBillingInactive)}, want: ClassBilling},
		{name: "openai 429 TPM rate limit with body hint", in: Input{Provider: "openai", Status: 429, Body: []byte(openAIRateLimit)}, want: ClassRateLimit,
			check: wantRetryAfter(1574 * time.Millisecond)},
		{name: "openai 429 Retry-After header and reset headers",
			in: Input{Provider: "openai", Status: 429, Body: []byte(openAIRateLimit), Header: hdr(
				"Retry-After", "20", "x-ratelimit-reset-tokens", "6m0s", "x-ratelimit-remaining-tokens", "0",
				"x-ratelimit-reset-requests", "12ms", "x-ratelimit-remaining-requests", "4999")},
			want: ClassRateLimit,
			check: func(t *testing.T, c Classified) {
				if c.RetryAfter != 20*time.Second {
					t.Errorf("RetryAfter = %v, want the header's 20s over the body's hint", c.RetryAfter)
				}
				if want := now.Add(6 * time.Minute); !c.ResetAt.Equal(want) {
					t.Errorf("ResetAt = %v, want the exhausted tokens window %v", c.ResetAt, want)
				}
			}},
		{name: "openai 400 context_length_exceeded", in: Input{Provider: "openai", Status: 400, Body: []byte(openAIContext)}, want: ClassContextOverflow,
			check: func(t *testing.T, c Classified) {
				if !c.Compress || c.Fallback {
					t.Errorf("overflow flags = compress %v fallback %v", c.Compress, c.Fallback)
				}
			}},
		{name: "openai 400 max_tokens too large is output_cap", in: Input{Provider: "openai", Model: "gpt-4o", Status: 400, Body: []byte(openAIMaxTokens)}, want: ClassOutputCap,
			check: all(wantCap(16384), wantFallback(false))},
		{name: "openai 400 unsupported parameter max_tokens is format_error", in: Input{Provider: "openai", Status: 400, Body: []byte(openAIUnsupported)}, want: ClassFormatError,
			check: wantFallback(true)},
		{name: "unsupported parameter as bare message", in: Input{Provider: "azure", Status: 400, Message: "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."}, want: ClassFormatError,
			check: wantFallback(true)},
		// Order guard (synthetic wording): a message that also reads like an
		// overflow and a cap must still be the unsupported-parameter error.
		{name: "unsupported parameter wins over overflow and cap words", in: Input{Provider: "x", Status: 400, Message: "Unsupported parameter: 'max_tokens' is too large for this model's context length; use 'max_completion_tokens' instead."}, want: ClassFormatError,
			check: wantFallback(true)},
		{name: "openai 404 model_not_found", in: Input{Provider: "openai", Status: 404, Body: []byte(openAIModel)}, want: ClassModelNotFound},
		{name: "openai 400 invalid_encrypted_content", in: Input{Provider: "openai", Status: 400, Body: []byte(openAIEncrypted)}, want: ClassInvalidEncryptedContent},
		{name: "openai 400 image in tool message", in: Input{Provider: "openai", Status: 400, Body: []byte(openAIToolImage)}, want: ClassMultimodalToolContent},
		{name: "openai 400 invalid_prompt is content policy", in: Input{Provider: "openai", Status: 400, Body: []byte(openAIInvalidPrompt)}, want: ClassContentPolicyBlocked,
			check: func(t *testing.T, c Classified) {
				if c.Retryable || !c.Fallback {
					t.Errorf("content policy flags = retryable %v fallback %v", c.Retryable, c.Fallback)
				}
			}},
		{name: "openai 400 tool schema rejection may suit another route", in: Input{Provider: "openai", Status: 400, Body: []byte(openAIToolSchema)}, want: ClassFormatError,
			check: wantFallback(true)},
		{name: "openai 400 plain validation aborts", in: Input{Provider: "openai", Status: 400, Body: []byte(openAIValidation)}, want: ClassFormatError,
			check: wantFallback(false)},
		{name: "openai 500", in: Input{Provider: "openai", Status: 500, Body: []byte(openAIServer)}, want: ClassServerError},
		{name: "openai 503 overloaded", in: Input{Provider: "openai", Status: 503, Body: []byte(openAIOverloaded)}, want: ClassOverloaded},

		// Anthropic
		{name: "anthropic 529 overloaded_error", in: Input{Provider: "anthropic", Status: 529, Body: []byte(anthOverloaded)}, want: ClassOverloaded,
			check: func(t *testing.T, c Classified) {
				if !c.Retryable || c.RotateCredential {
					t.Errorf("overloaded flags = retryable %v rotate %v", c.Retryable, c.RotateCredential)
				}
			}},
		{name: "anthropic overloaded_error mid-stream in a 200", in: Input{Provider: "anthropic", Status: 200, MidStream: true, Body: []byte(anthOverloaded)}, want: ClassOverloaded},
		{name: "anthropic 429 rate_limit_error with headers",
			in: Input{Provider: "anthropic", Status: 429, Body: []byte(anthRateLimit), Header: hdr(
				"retry-after", "30", "anthropic-ratelimit-input-tokens-reset", resetRFC, "anthropic-ratelimit-input-tokens-remaining", "0")},
			want: ClassRateLimit,
			check: func(t *testing.T, c Classified) {
				if c.RetryAfter != 30*time.Second {
					t.Errorf("RetryAfter = %v, want 30s", c.RetryAfter)
				}
				if want := now.Add(90 * time.Second); !c.ResetAt.Equal(want) {
					t.Errorf("ResetAt = %v, want %v", c.ResetAt, want)
				}
			}},
		{name: "anthropic 500 api_error", in: Input{Provider: "anthropic", Status: 500, Body: []byte(anthAPIError)}, want: ClassServerError},
		{name: "anthropic 401 authentication_error", in: Input{Provider: "anthropic", Status: 401, Body: []byte(anthAuth)}, want: ClassAuth},
		// anthropics/claude-code#19028.
		{name: "anthropic 400 organization disabled", in: Input{Provider: "anthropic", Status: 400, Body: []byte(`{"type":"error","error":{"type":"invalid_request_error","message":"This organization has been disabled."},"request_id":"req_011CXF1SZ3S3oXChsdxhoUwV"}`)}, want: ClassAuthPermanent},
		{name: "anthropic 403 permission_error", in: Input{Provider: "anthropic", Status: 403, Body: []byte(anthPerm)}, want: ClassAuth},
		{name: "anthropic 404 not_found_error", in: Input{Provider: "anthropic", Status: 404, Body: []byte(anthNotFound)}, want: ClassModelNotFound},
		{name: "anthropic 413 request_too_large", in: Input{Provider: "anthropic", Status: 413, Body: []byte(anthTooLarge)}, want: ClassPayloadTooLarge,
			check: func(t *testing.T, c Classified) {
				if !c.Compress {
					t.Error("payload_too_large should compress")
				}
			}},
		{name: "bare 413 without body", in: Input{Provider: "openai", Status: 413}, want: ClassPayloadTooLarge},
		{name: "anthropic 400 prompt is too long", in: Input{Provider: "anthropic", Status: 400, Body: []byte(anthPromptLong)}, want: ClassContextOverflow},
		{name: "anthropic 400 max_tokens above model maximum", in: Input{Provider: "anthropic", Status: 400, Body: []byte(anthMaxTokens)}, want: ClassOutputCap,
			check: wantCap(64000)},
		{name: "anthropic 400 input plus max_tokens over the limit", in: Input{Provider: "anthropic", Status: 400, Body: []byte(anthSumCap)}, want: ClassOutputCap,
			check: wantCap(11760)},
		{name: "anthropic 400 max_tokens vs thinking budget is not a cap", in: Input{Provider: "anthropic", Status: 400, Body: []byte(anthBudget)}, want: ClassFormatError},
		{name: "anthropic 400 credit balance is certain billing", in: Input{Provider: "anthropic", Status: 400, Body: []byte(anthCredit)}, want: ClassBilling,
			check: func(t *testing.T, c Classified) {
				if c.BillingUnverified || c.PossibleContentFilter || !c.Certain {
					t.Errorf("credit balance verdict = unverified %v filter %v certain %v, want a certain billing verdict",
						c.BillingUnverified, c.PossibleContentFilter, c.Certain)
				}
			}},
		{name: "anthropic 400 out of extra usage is unverified billing", in: Input{Provider: "anthropic", Status: 400, Body: []byte(anthExtraUsage)}, want: ClassBilling,
			check: func(t *testing.T, c Classified) {
				if !c.BillingUnverified || !c.PossibleContentFilter || c.Certain {
					t.Errorf("extra usage verdict = unverified %v filter %v certain %v", c.BillingUnverified, c.PossibleContentFilter, c.Certain)
				}
				if !c.RotateCredential || !c.Fallback {
					t.Errorf("unverified billing still rotates and falls back: rotate %v fallback %v", c.RotateCredential, c.Fallback)
				}
			}},
		{name: "status-less out of extra usage is unverified billing", in: Input{Provider: "anthropic", Message: "You're out of extra usage. Add more at claude.ai/settings/usage and keep going."}, want: ClassBilling,
			check: func(t *testing.T, c Classified) {
				if !c.BillingUnverified {
					t.Error("status-less extra-usage text must be flagged unverified")
				}
			}},
		{name: "anthropic 400 thinking signature", in: Input{Provider: "anthropic", Status: 400, Body: []byte(anthSignature)}, want: ClassThinkingSignature},
		{name: "anthropic 400 thinking block required", in: Input{Provider: "anthropic", Status: 400, Body: []byte(anthThinkingFirst)}, want: ClassThinkingSignature},
		{name: "anthropic 400 could not process image", in: Input{Provider: "anthropic", Status: 400, Body: []byte(anthImage)}, want: ClassImageCorrupt},
		{name: "anthropic 400 image exceeds 5 MB", in: Input{Provider: "anthropic", Status: 400, Body: []byte(anthImageBig)}, want: ClassImageTooLarge},
		{name: "anthropic 400 image dimensions", in: Input{Provider: "anthropic", Status: 400, Body: []byte(anthImageDims)}, want: ClassImageTooLarge},
		{name: "anthropic 400 roles must alternate", in: Input{Provider: "anthropic", Status: 400, Body: []byte(anthRoles)}, want: ClassRoleAlternation},

		// OpenRouter and other aggregators
		{name: "openrouter 429 relaying upstream rate limit (text raw)", in: Input{Provider: "openrouter", Status: 429, Body: []byte(orUpstreamText)}, want: ClassUpstreamRateLimit,
			check: func(t *testing.T, c Classified) {
				if c.RotateCredential || !c.Fallback {
					t.Errorf("upstream rate limit flags = rotate %v fallback %v, want fall back without rotating", c.RotateCredential, c.Fallback)
				}
				if c.UpstreamProvider != "BaseTen" {
					t.Errorf("UpstreamProvider = %q, want BaseTen", c.UpstreamProvider)
				}
				if c.ProviderMessage == "Provider returned error" {
					t.Error("ProviderMessage should be the upstream's words, not the aggregator's wrapper")
				}
			}},
		// A bare provider_name under the generic wrapper, recognised by base URL.
		{name: "openrouter 429 with provider_name only", in: Input{Provider: "custom", BaseURL: "https://openrouter.ai/api/v1", Status: 429,
			Body: []byte(`{"error":{"message":"Provider returned error","code":429,"metadata":{"provider_name":"Venice"}}}`)}, want: ClassUpstreamRateLimit,
			check: func(t *testing.T, c Classified) {
				if c.UpstreamProvider != "Venice" {
					t.Errorf("UpstreamProvider = %q, want Venice", c.UpstreamProvider)
				}
			}},
		// The API hint types an envelope-less body (here without a status).
		{name: "anthropic adapter body without envelope", in: Input{Provider: "anthropic", API: "anthropic", Body: []byte(`{"error":{"type":"not_found_error","message":"model: claude-3-opus-latest"}}`)}, want: ClassModelNotFound},
		{name: "openrouter 429 relaying upstream JSON", in: Input{Provider: "openrouter", Status: 429, Body: []byte(orUpstreamJSON)}, want: ClassUpstreamRateLimit},
		{name: "openrouter 429 relaying an output cap is a clamp", in: Input{Provider: "openrouter", Status: 429, Body: []byte(orWrappedCap)}, want: ClassOutputCap,
			check: all(wantCap(64000), wantFallback(false))},
		{name: "gateway upstream_error thinking signature", in: Input{Provider: "claude-code-hub", Status: 400, Body: []byte(hubSignature)}, want: ClassThinkingSignature},
		{name: "openrouter 404 data policy", in: Input{Provider: "openrouter", Status: 404, Body: []byte(orDataPolicy)}, want: ClassProviderPolicyBlocked,
			check: func(t *testing.T, c Classified) {
				if c.Fallback || c.Retryable {
					t.Errorf("provider policy must abort: fallback %v retryable %v", c.Fallback, c.Retryable)
				}
			}},
		{name: "openrouter 402 needs credits", in: Input{Provider: "openrouter", Status: 402, Body: []byte(orCredits)}, want: ClassBilling},
		{name: "402 that resets is a rate limit", in: Input{Provider: "openrouter", Status: 402, Body: []byte(`{"error":{"message":"Daily spend limit reached for this key; it resets at 00:00 UTC, try again then.","code":402}}`)}, want: ClassRateLimit},
		{name: "openrouter 429 daily limit that names its reset is a rate limit", in: Input{Provider: "openrouter", Status: 429, Body: []byte(orFreeDaily)}, want: ClassRateLimit,
			check: func(t *testing.T, c Classified) {
				if want := time.UnixMilli(1773532800000); !c.ResetAt.Equal(want) {
					t.Errorf("ResetAt = %v, want %v", c.ResetAt, want)
				}
			}},
		{name: "openrouter 403 moderation", in: Input{Provider: "openrouter", Status: 403, Body: []byte(orModeration)}, want: ClassContentPolicyBlocked},
		{name: "openrouter 400 reasoning mandatory", in: Input{Provider: "openrouter", Status: 400, Body: []byte(orReasoning)}, want: ClassReasoningMandatory},
		{name: "router relaying openrouter JSON inside its message", in: Input{Provider: "ccr", Status: 400, Body: []byte(routerReasoning)}, want: ClassReasoningMandatory},
		{name: "reasoning is required wording", in: Input{Provider: "x", Status: 400, Body: []byte(`{"error":{"message":"Reasoning is required for this model and cannot be turned off.","code":400}}`)}, want: ClassReasoningMandatory},
		{name: "openrouter 502 model down", in: Input{Provider: "openrouter", Status: 502, Body: []byte(`{"error":{"message":"Your chosen model is down or we received an invalid response from it","code":502}}`)}, want: ClassServerError},

		// Azure OpenAI
		{name: "azure 400 content filter", in: Input{Provider: "azure", Status: 400, Body: []byte(azureFilter)}, want: ClassContentPolicyBlocked,
			check: wantFallback(true)},
		{name: "azure 429 token rate with retry hint is not billing", in: Input{Provider: "azure", Status: 429, Body: []byte(azureRate)}, want: ClassRateLimit,
			check: wantRetryAfter(6 * time.Second)},
		{name: "azure 401", in: Input{Provider: "azure", Status: 401, Body: []byte(azureAuth)}, want: ClassAuth},

		// Gemini (OpenAI-compatible endpoint and Vertex)
		{name: "gemini list-wrapped RESOURCE_EXHAUSTED", in: Input{Provider: "gemini", Status: 429, Body: []byte(geminiExhausted)}, want: ClassRateLimit},
		{name: "gemini quota text with RetryInfo is a rate limit", in: Input{Provider: "gemini", Status: 429, Body: []byte(geminiQuotaRetry)}, want: ClassRateLimit,
			check: wantRetryAfter(47 * time.Second)},
		{name: "gemini list-wrapped API key not valid", in: Input{Provider: "gemini", Status: 400, Body: []byte(geminiBadKey)}, want: ClassAuth},
		{name: "vertex relaying anthropic thinking signature", in: Input{Provider: "vertex", Status: 400, Body: []byte(vertexSignature)}, want: ClassThinkingSignature},
		{name: "gemini missing thought_signature", in: Input{Provider: "gemini", Status: 400, Body: []byte(geminiThought)}, want: ClassThinkingSignature},
		{name: "gemini 503 UNAVAILABLE", in: Input{Provider: "gemini", Status: 503, Body: []byte(geminiUnavailable)}, want: ClassOverloaded},
		{name: "client-relayed gemini 429 without status", in: Input{Provider: "gemini", Body: []byte(continueGemini)}, want: ClassRateLimit},

		// vLLM
		{name: "vllm maximum context length", in: Input{Provider: "vllm", Status: 400, Body: []byte(vllmContext)}, want: ClassContextOverflow},
		{name: "vllm max_tokens too large is a clamp", in: Input{Provider: "vllm", Status: 400, Body: []byte(vllmMaxTokens)}, want: ClassOutputCap,
			check: wantCap(4096 - 2778)},
		{name: "vllm input alone over the window is an overflow", in: Input{Provider: "vllm", Status: 400, Body: []byte(vllmInputFills)}, want: ClassContextOverflow},
		{name: "vllm roles must alternate", in: Input{Provider: "vllm", Status: 400, Body: []byte(vllmRoles)}, want: ClassRoleAlternation},

		// llama.cpp server
		{name: "llama.cpp 400 exceed_context_size_error", in: Input{Provider: "llamacpp", Status: 400, Body: []byte(llamaContext400)}, want: ClassContextOverflow},
		{name: "llama.cpp 500 exceed_context_size_error", in: Input{Provider: "llamacpp", Status: 500, Body: []byte(llamaContext500)}, want: ClassContextOverflow},
		{name: "llama.cpp grammar failure (top-level body)", in: Input{Provider: "llamacpp", Status: 400, Body: []byte(llamaGrammar)}, want: ClassLlamaCppGrammar},
		{name: "lm studio grammar failure (enveloped)", in: Input{Provider: "lmstudio", Status: 400, Body: []byte(lmstudioGrammar)}, want: ClassLlamaCppGrammar},

		// Ollama
		{name: "ollama native model not found", in: Input{Provider: "ollama", Status: 404, Body: []byte(ollamaNative)}, want: ClassModelNotFound},
		{name: "ollama openai-compat model not found (type api_error)", in: Input{Provider: "ollama", Status: 404, Body: []byte(ollamaCompat)}, want: ClassModelNotFound,
			check: func(t *testing.T, c Classified) {
				if !c.Certain {
					t.Error("a 404 naming the model is certain")
				}
			}},
		{name: "ollama context overflow", in: Input{Provider: "ollama", Status: 400, Body: []byte(ollamaOverflow)}, want: ClassContextOverflow},

		// Status families without a telling body
		{name: "408", in: Input{Provider: "openai", Status: 408}, want: ClassTimeout},
		{name: "502 html page", in: Input{Provider: "openai", Status: 502, Body: []byte("<html><head><title>502 Bad Gateway</title></head><body>cloudflare</body></html>")}, want: ClassServerError},
		{name: "504", in: Input{Provider: "openai", Status: 504}, want: ClassServerError},
		// A 404 that is not about a model is a wrong endpoint, not a
		// missing model (issue 11, item 12).
		{name: "404 without model words is a wrong endpoint", in: Input{Provider: "custom", Status: 404, Body: []byte(ollamaPageNotFound)}, want: ClassEndpointNotFound},
		{name: "404 with nothing at all is a guessed wrong endpoint", in: Input{Provider: "custom", Status: 404}, want: ClassEndpointNotFound, check: wantUncertain},
		{name: "404 json page not found (ollama via a client)", in: Input{Provider: "ollama", Status: 404, Body: []byte(ollamaPageNotFoundJSON)}, want: ClassEndpointNotFound},
		{name: "404 html nginx page", in: Input{Provider: "custom", Status: 404, Body: []byte(nginx404)}, want: ClassEndpointNotFound},
		{name: "403 without billing words is auth", in: Input{Provider: "openai", Status: 403, Body: []byte(`{"error":{"message":"Forbidden"}}`)}, want: ClassAuth},
		{name: "401 with billing words is billing", in: Input{Provider: "deepseek", Status: 401, Body: []byte(`{"error":{"message":"Insufficient Balance","type":"unknown_error"}}`)}, want: ClassBilling},

		// Empty answers and transport failures
		{name: "empty 400 on a very large session is a probable overflow", in: Input{Provider: "openai", Status: 400, ContextTokens: 150000, ContextWindow: 200000}, want: ClassContextOverflow,
			check: wantUncertain},
		{name: "empty 400 on a session of many messages", in: Input{Provider: "openai", Status: 400, Body: []byte("{}"), Messages: 250, Message: "400 Bad Request"}, want: ClassContextOverflow,
			check: wantUncertain},
		{name: "empty 400 on a small session is a format error", in: Input{Provider: "openai", Status: 400, ContextTokens: 1000, ContextWindow: 200000}, want: ClassFormatError,
			check: wantUncertain},
		{name: "bare EOF on a very large request", in: Input{Provider: "openai", Transport: llm.TransportEOF, Message: "unexpected EOF", ContextTokens: 190000, ContextWindow: 200000}, want: ClassContextOverflow,
			check: wantUncertain},
		{name: "bare EOF on a small request", in: Input{Provider: "openai", Transport: llm.TransportEOF, Message: "unexpected EOF", ContextTokens: 1000, ContextWindow: 200000}, want: ClassTimeout},
		{name: "EOF mid-stream on a large request is not an overflow", in: Input{Provider: "openai", Transport: llm.TransportEOF, MidStream: true, ContextTokens: 190000, ContextWindow: 200000}, want: ClassTimeout},
		{name: "connection reset", in: Input{Provider: "openai", Transport: llm.TransportReset, Message: "read tcp 10.0.0.2:51234->1.2.3.4:443: read: connection reset by peer"}, want: ClassTimeout},
		{name: "read timeout", in: Input{Provider: "openai", Transport: llm.TransportTimeout, Message: "net/http: timeout awaiting response headers"}, want: ClassTimeout},
		{name: "transient TLS alert", in: Input{Provider: "openai", Transport: llm.TransportTLS, Message: "remote error: tls: bad record MAC"}, want: ClassTimeout},
		{name: "certificate verification", in: Input{Provider: "local", Transport: llm.TransportTLSCert, Message: "tls: failed to verify certificate: x509: certificate signed by unknown authority"}, want: ClassSSLCert,
			check: func(t *testing.T, c Classified) {
				if c.Retryable || c.Fallback {
					t.Errorf("ssl must fail fast: retryable %v fallback %v", c.Retryable, c.Fallback)
				}
			}},
		{name: "certificate text without transport kind", in: Input{Provider: "local", Message: "Get \"https://10.0.0.5/v1\": x509: certificate has expired or is not yet valid"}, want: ClassSSLCert},
		{name: "caller canceled", in: Input{Provider: "openai", Transport: llm.TransportCanceled, Message: "context canceled", ContextTokens: 190000, ContextWindow: 200000}, want: ClassCanceled,
			check: func(t *testing.T, c Classified) {
				if c.Retryable || c.Fallback || c.RotateCredential {
					t.Error("canceled must never be retried, rotated or fallen back from")
				}
			}},
		// Status-less texts as users paste them (issue 11, item 11).
		{name: "node getaddrinfo ENOTFOUND", in: Input{Message: nodeENOTFOUND}, want: ClassTimeout},
		{name: "node getaddrinfo EAI_AGAIN", in: Input{Message: nodeEAIAGAIN}, want: ClassTimeout},
		{name: "node ECONNREFUSED", in: Input{Message: nodeECONNREFUSED}, want: ClassTimeout},
		{name: "node ECONNRESET", in: Input{Message: nodeECONNRESET}, want: ClassTimeout},
		{name: "undici fetch failed", in: Input{Message: undiciFetchFailed}, want: ClassTimeout},
		{name: "python name resolution", in: Input{Message: pyNameResolution}, want: ClassTimeout},
		{name: "python name or service not known", in: Input{Message: pyNameNotKnown}, want: ClassTimeout},
		{name: "no route to host", in: Input{Message: goNoRoute}, want: ClassTimeout},
		{name: "network is unreachable", in: Input{Message: goUnreachable}, want: ClassTimeout},
		{name: "httpx server disconnected", in: Input{Message: httpxDisconnected}, want: ClassTimeout},
		{name: "envoy reset before headers", in: Input{Message: envoyReset}, want: ClassTimeout},
		{name: "envoy reset before headers on a huge session is a probable overflow", in: Input{Message: envoyReset, ContextTokens: 190000, ContextWindow: 200000}, want: ClassContextOverflow, check: wantUncertain},
		{name: "go deadline exceeded", in: Input{Message: goDeadline}, want: ClassTimeout},
		{name: "openai-node request timed out", in: Input{Message: nodeTimedOut}, want: ClassTimeout},
		{name: "tls bad record mac (python)", in: Input{Message: pyBadRecordMAC}, want: ClassTimeout},
		{name: "tls alert bad record mac mid-generation", in: Input{Message: pyAlertBadRecordMAC}, want: ClassTimeout},
		{name: "tls unexpected eof", in: Input{Message: pyUnexpectedEOF}, want: ClassTimeout},
		{name: "tls certificate failure is not transient", in: Input{Message: pyCertFailed}, want: ClassSSLCert},
		{name: "bedrock input too long, message only", in: Input{Message: bedrockTooLong}, want: ClassContextOverflow},
		{name: "litellm context window exceeded, message only", in: Input{Message: litellmWindow}, want: ClassContextOverflow},
		{name: "azure input tokens exceed the configured limit", in: Input{Message: azureInputLimit}, want: ClassContextOverflow},
		{name: "sglang longer than the context length", in: Input{Message: sglangContext}, want: ClassContextOverflow},
		{name: "bedrock body over the payload limit", in: Input{Message: bedrockPayload}, want: ClassPayloadTooLarge},
		{name: "anthropic request_too_large, message only", in: Input{Message: "Request exceeds the maximum allowed number of bytes."}, want: ClassPayloadTooLarge},
		{name: "openai invalid key, message only", in: Input{Message: "Error code: 401 - " + openAIBadKey}, want: ClassAuth},
		{name: "openrouter no auth credentials, message only", in: Input{Message: orNoAuth}, want: ClassAuth},
		{name: "quota, message only", in: Input{Message: "You exceeded your current quota, please check your plan and billing details."}, want: ClassBilling},
		{name: "anthropic credit balance, message only", in: Input{Message: "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}, want: ClassBilling},
		{name: "anthropic rate limit, message only", in: Input{Message: "This request would exceed your account's rate limit. Please try again later."}, want: ClassRateLimit},
		{name: "model not found, message only", in: Input{Message: "The model `gpt-5-turbo` does not exist or you do not have access to it."}, want: ClassModelNotFound},
		{name: "content policy, message only", in: Input{Message: "Invalid prompt: your prompt was flagged as potentially violating our usage policy."}, want: ClassContentPolicyBlocked},

		// Disambiguation the field has learned (issue 11, item 12).
		{name: "429 usage limit that resets is a rate limit, with its reset", in: Input{Provider: "openai", Status: 429, Body: []byte(codexUsageLimit)}, want: ClassRateLimit,
			check: func(t *testing.T, c Classified) {
				if want := now.Add(529498 * time.Second); !c.ResetAt.Equal(want) {
					t.Errorf("ResetAt = %v, want %v", c.ResetAt, want)
				}
			}},
		{name: "402 usage limit that resets is a rate limit, not billing", in: Input{Provider: "openai", Status: 402, Body: []byte(codexUsageLimit)}, want: ClassRateLimit},
		{name: "429 minimax 5-hour usage limit", in: Input{Provider: "minimax", API: "anthropic", Status: 429, Body: []byte(minimaxUsageLimit)}, want: ClassRateLimit},
		{name: "429 whose body says overloaded", in: Input{Provider: "openai", Status: 429, Body: []byte(openAIOverloaded)}, want: ClassOverloaded},
		{name: "500 api_error Overloaded is overloaded", in: Input{Provider: "anthropic", API: "anthropic", Status: 500, Body: []byte(anthAPIOverloaded)}, want: ClassOverloaded},
		{name: "500 whose body is an overflow compresses", in: Input{Provider: "vllm", Status: 500, Body: []byte(vllm500Context)}, want: ClassContextOverflow},
		{name: "500 litellm wrapping an anthropic overflow", in: Input{Provider: "litellm", Status: 500, Body: []byte(litellmWrappedOverflow)}, want: ClassContextOverflow},
		{name: "azure deployment not found is the model", in: Input{Provider: "azure", Status: 404, Body: []byte(azureDeployment)}, want: ClassModelNotFound},
		{name: "anthropic long context beta refused", in: Input{Provider: "anthropic", API: "anthropic", Status: 400, Body: []byte(anthLongContext)}, want: ClassLongContextUnavailable},
		{name: "model without vision (lm studio, ollama)", in: Input{Provider: "lmstudio", Status: 400, Body: []byte(lmStudioNoImages)}, want: ClassImageUnsupported},
		{name: "model without vision, chinese gateway", in: Input{Provider: "sub2api", Status: 400, Body: []byte(sub2apiNoImages)}, want: ClassImageUnsupported},
		{name: "an unsupported image format is a bad image, not a text-only model", in: Input{Provider: "openai", Status: 400, Body: []byte(`{"error":{"message":"Invalid image: unsupported image format","type":"invalid_request_error"}}`)}, want: ClassImageCorrupt},
		{name: "unrecognised failure", in: Input{Provider: "openai", Message: "something odd happened"}, want: ClassUnknown,
			check: func(t *testing.T, c Classified) {
				if !c.Retryable || c.Certain {
					t.Errorf("unknown = retryable %v certain %v, want retryable guess", c.Retryable, c.Certain)
				}
			}},
	}
}

func TestClassifyRealBodies(t *testing.T) {
	now := testNow()
	cases := realCases(now)
	if len(cases) < 60 {
		t.Fatalf("only %d cases; the table must cover at least 60 real shapes", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Now = now
			got := Classify(tc.in)
			if got.Class != tc.want {
				t.Fatalf("Class = %s, want %s (summary %q, message %q)", got.Class, tc.want, got.Summary, got.ProviderMessage)
			}
			if got.Summary == "" || got.Advice == "" {
				t.Errorf("Summary %q / Advice %q must not be empty", got.Summary, got.Advice)
			}
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}
}

func TestClassifyCoversEveryClass(t *testing.T) {
	// Every class must be the expected verdict of at least one real body,
	// so that no class silently becomes unreachable.
	seen := map[Class]bool{}
	for _, tc := range realCases(testNow()) {
		seen[tc.want] = true
	}
	for _, c := range Classes() {
		if !seen[c] && !c.EngineOnly() {
			t.Errorf("no table case expects class %s", c)
		}
		if _, ok := recoveryOf(c); !ok {
			t.Errorf("class %s has no recovery profile", c)
		}
	}
}

func TestClassifySummaryBlamesTheRightProvider(t *testing.T) {
	tests := []struct {
		name    string
		in      Input
		want    string
		notWant string
	}{
		{"rate limit names provider and status", Input{Provider: "openai", Status: 429, Body: []byte(openAIRateLimit)}, "rate limited by openai (429)", ""},
		{"overloaded names status", Input{Provider: "anthropic", Status: 529, Body: []byte(anthOverloaded)}, "anthropic overloaded (529)", ""},
		{"upstream gets the blame", Input{Provider: "openrouter", Status: 429, Body: []byte(orUpstreamText)}, "openrouter (upstream BaseTen)", ""},
		{"cancel is not the provider's fault", Input{Provider: "openai", Transport: llm.TransportCanceled}, "canceled by the caller", "openai"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Classify(tt.in).Summary
			if !strings.Contains(s, tt.want) {
				t.Errorf("Summary = %q, want it to contain %q", s, tt.want)
			}
			if tt.notWant != "" && strings.Contains(s, tt.notWant) {
				t.Errorf("Summary = %q, must not mention %q", s, tt.notWant)
			}
		})
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
