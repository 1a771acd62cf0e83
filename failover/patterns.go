package failover

import (
	"github.com/talaria-agent/talaria/internal/lazy"
	"strconv"
	"strings"
)

// Message patterns, matched against lower-cased provider text. Each list is
// phrased after real provider bodies (see the table tests for sources).

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// unsupportedParam: the request used a parameter this model or route does
// not take ("Unsupported parameter: 'max_tokens' is not supported with this
// model. Use 'max_completion_tokens' instead."). Checked before the output
// cap and overflow patterns, which would otherwise match "max_tokens".
func unsupportedParam(s string) bool {
	return containsAny(s, "unsupported parameter", "unsupported_parameter", "unsupported value",
		"unsupported_value", "is not supported with this model", "unrecognized request argument",
		"unknown parameter", "extra inputs are not permitted", "unrecognized_keys")
}

var (
	outputCapNameRe = lazy.Regexp(`max_(?:completion_|output_|new_)?tokens|maxoutputtokens|output tokens`)
	outputCapWordRe = lazy.Regexp(`too large|maximum allowed|at most|above maximum|exceed context limit|less than or equal|<=|>\s*\d`)
	// OpenAI: "This model supports at most 16384 completion tokens".
	capAtMostRe = lazy.Regexp(`supports at most (\d+) (?:completion|output) tokens`)
	// Anthropic: "max_tokens: 64001 > 64000, which is the maximum allowed …".
	capAnthropicRe = lazy.Regexp(`max_tokens:\s*(\d+)\s*>\s*(\d+)`)
	// vLLM: "(8000 > 4096 - 2778)": requested > window - input.
	capVLLMRe = lazy.Regexp(`\((\d+)\s*>\s*(\d+)\s*-\s*(\d+)\)`)
	// Anthropic: "input length and `max_tokens` exceed context limit:
	// 188240 + 21333 > 200000".
	capSumRe = lazy.Regexp(`exceed context limit:\s*(\d+)\s*\+\s*(\d+)\s*>\s*(\d+)`)
	// Validation errors: "expected a value <= 12288", "less than or equal to 4096".
	capLERe = lazy.Regexp(`(?:<=|less than or equal to)\s*(\d+)`)
)

// outputCap recognises "max_tokens is above what this model can produce"
// and parses the largest value the error allows (0 if none is stated). A
// limit of -1 means the stated input alone fills the window, which no clamp
// can fix.
func outputCap(s string) (limit int, ok bool) {
	if !outputCapNameRe().MatchString(s) || !outputCapWordRe().MatchString(s) {
		return 0, false
	}
	// "`max_tokens` must be greater than `thinking.budget_tokens`" is a
	// request-shape error, not a cap.
	if strings.Contains(s, "budget_tokens") || strings.Contains(s, "must be at least") {
		return 0, false
	}
	atoi := func(v string) int { n, _ := strconv.Atoi(v); return n }
	switch {
	case capAtMostRe().MatchString(s):
		return atoi(capAtMostRe().FindStringSubmatch(s)[1]), true
	case capAnthropicRe().MatchString(s):
		return atoi(capAnthropicRe().FindStringSubmatch(s)[2]), true
	case capVLLMRe().MatchString(s):
		m := capVLLMRe().FindStringSubmatch(s)
		return remainder(atoi(m[2]), atoi(m[3])), true
	case capSumRe().MatchString(s):
		m := capSumRe().FindStringSubmatch(s)
		return remainder(atoi(m[3]), atoi(m[1])), true
	case capLERe().MatchString(s):
		return atoi(capLERe().FindStringSubmatch(s)[1]), true
	}
	return 0, true
}

// remainder is what a window leaves for output after the input, or -1.
func remainder(window, input int) int {
	if r := window - input; r > 0 {
		return r
	}
	return -1
}

func thinkingSignature(s string) bool {
	return (strings.Contains(s, "signature") && (strings.Contains(s, "thinking") || strings.Contains(s, "thought"))) ||
		strings.Contains(s, "expected `thinking` or `redacted_thinking`") ||
		strings.Contains(s, "must start with a thinking block") ||
		(strings.Contains(s, "redacted_thinking") && containsAny(s, "cannot be modified", "must remain as they were"))
}

func encryptedContent(s string) bool {
	return strings.Contains(s, "invalid_encrypted_content") ||
		(strings.Contains(s, "encrypted content") && containsAny(s, "could not be verified", "could not be decrypted", "invalid"))
}

func reasoningMandatory(s string) bool {
	return containsAny(s, "reasoning is mandatory", "reasoning is required", "reasoning cannot be disabled")
}

func roleAlternation(s string) bool {
	return containsAny(s, "roles must alternate", "must alternate between", "must alternate user", "alternate user/assistant")
}

func multimodalToolContent(s string) bool {
	if containsAny(s, "role 'tool' contains an image", "tool message content only supports text",
		"tool results with images", "images in tool results", "tool_result content does not support image") {
		return true
	}
	return strings.Contains(s, "image") && strings.Contains(s, "tool") &&
		containsAny(s, "not supported", "only allowed", "only supports", "unsupported")
}

// imageUnsupported: the model takes no images at all. Not a bad image
// ("unsupported image format" is imageCorrupt): the words say the model or
// endpoint does not support image input or vision.
func imageUnsupported(s string) bool {
	return containsAny(s, "does not support image input", "doesn't support image input", "does not support images",
		"doesn't support images", "does not support vision", "image input is not supported", "image input not supported",
		"images are not supported", "vision is not supported", "model is not multimodal", "不支持图像输入", "不支持图片")
}

func imageTooLarge(s string) bool {
	return containsAny(s, "image exceeds", "image too large", "image_too_large", "image is too large") ||
		(strings.Contains(s, "image") && containsAny(s, "dimensions exceed", "exceed max allowed size", "maximum size", "too big", "dimension limit"))
}

func imageCorrupt(s string) bool {
	return containsAny(s, "could not process image", "unable to process image", "invalid image",
		"unsupported image", "could not decode image", "failed to decode image", "image_parse_error",
		"not a valid image", "unable to determine image format")
}

func grammarPattern(s string) bool {
	return containsAny(s, "failed to parse grammar", "failed to initialize samplers", "error parsing grammar",
		"json schema conversion failed", "pattern must start with '^'")
}

func contextOverflow(s string) bool {
	return containsAny(s, "context length", "context_length", "context window", "maximum context",
		"prompt is too long", "prompt too long", "max_model_len", "input is too long", "input too long",
		"too many input tokens", "too many tokens", "exceeds the available context size",
		"input length exceeds", "reduce the length of the messages", "exceed context limit",
		"input token count", "context size", "context window exceeded", "longer than the model's context length",
		"input tokens exceed the configured limit", "input is too long for requested model") ||
		tokenLimitWords(s)
}

// tokenLimitRe: wordings that state a token limit the input went over
// (Poolside/Together "maximum allowed input length of N tokens", xAI
// "maximum prompt length is N", Copilot "token count of N exceeds the
// limit of M", Kimi "exceeded model token limit", TGI "`inputs` must have
// less than N tokens", llama.cpp "context size has been exceeded").
var tokenLimitRe = lazy.Regexp(`maximum allowed input length|maximum prompt length is \d|token count of \d+ exceeds|` +
	`exceeded model token limit|inputs\W{0,3} must have less than \d+ tokens|context size has been exceeded|` +
	`requested tokens \(\d+\) exceed context window`)

func tokenLimitWords(s string) bool { return tokenLimitRe().MatchString(s) }

// throttleWords: a throttle that names tokens ("Too many tokens, please
// wait before trying again", Bedrock's ThrottlingException): a rate limit,
// never an overflow, though the words say "too many tokens".
func throttleWords(s string) bool {
	return containsAny(s, "please wait before trying again", "throttlingexception", "too many tokens per")
}

// contextOverflowStrict holds only phrases no server echoes from a request:
// it is what a 5xx body is searched for, where an overflow must be
// compressed, not retried.
func contextOverflowStrict(s string) bool {
	return containsAny(s, "context_length_exceeded", "maximum context length is", "prompt is too long:",
		"context window exceeded", "exceeds the available context size", "input is too long for requested model",
		"longer than the model's context length", "contextwindowexceedederror") || tokenLimitWords(s)
}

// payloadTooLarge: the body, not the token count, is over a size limit.
func payloadTooLarge(s string) bool {
	return containsAny(s, "request entity too large", "payload too large", "request_too_large",
		"exceeds the maximum allowed number of bytes", "request body too large", "body exceeded")
}

// longContextUnavailable: Anthropic's refusal of the 1M-context beta.
func longContextUnavailable(s string) bool {
	return strings.Contains(s, "long context beta") && containsAny(s, "not yet available", "not available")
}

// endpointNotFound: a 404 that names a path or page, not a model.
func endpointNotFound(s string) bool {
	return containsAny(s, "page not found", "404 not found", "resource not found", "no route", "unknown url",
		"not found</", "invalid url", "cannot post", "path not found", "no such endpoint", "endpoint not found")
}

func providerPolicy(s string) bool {
	return containsAny(s, "data policy", "guardrail restrictions", "model training violation", "settings/privacy")
}

func contentPolicy(s string) bool {
	return containsAny(s, "content management policy", "content_policy", "content policy", "content filter",
		"content_filter", "responsibleaipolicyviolation", "flagged", "moderation", "safety system",
		"blocked by safety", "safety settings", "usage policies", "usage policy", "prohibited content",
		"invalid_prompt")
}

// billingUnverified: billing-shaped text that is known to be also used for
// other rejections (Anthropic's subscription content filter answers "You're
// out of extra usage").
func billingUnverified(s string) bool {
	return containsAny(s, "out of extra usage", "draw from your extra usage")
}

// billingWords: credit or quota exhausted. strict leaves out the bare words
// "quota" and "billing", which some providers use for rate limits.
func billingWords(s string, strict bool) bool {
	if containsAny(s, "insufficient_quota", "exceeded your current quota", "credit balance", "requires more credits",
		"insufficient credit", "insufficient balance", "insufficient funds", "out of credits",
		"not enough credits", "purchase credits", "add credits", "add more credits", "more credits",
		"payment required", "spend limit", "spending limit", "billing_error", "unpaid", "plans & billing",
		"not_supported_on_free_tier", "not available on the free tier", "plan does not include") {
		return true
	}
	return !strict && containsAny(s, "quota", "billing", "credits")
}

func authWords(s string) bool {
	return containsAny(s, "invalid api key", "incorrect api key", "no auth credentials found", "api key is invalid",
		"authentication failed", "invalid_authentication", "invalid token", "api key not valid", "invalid x-api-key",
		"invalid_api_key", "api key not found", "invalid authentication", "authentication_error",
		"unauthorized", "invalid bearer token", "api_key_invalid", "missing api key", "no api key",
		"token has expired", "expired token")
}

func authPermanentWords(s string) bool {
	return containsAny(s, "account has been deactivated", "account deactivated", "organization has been disabled",
		"account has been disabled", "account is disabled", "has been suspended", "has been banned",
		"access terminated", "organization is disabled")
}

var modelNotFoundRe = lazy.Regexp(`model\b[^.]{0,80}\bnot found|no endpoints found for`)

func modelNotFound(s string) bool {
	return containsAny(s, "model_not_found", "model not found", "no such model", "unknown model",
		"try pulling it first", "is not a valid model", "invalid model", "deploymentnotfound",
		"deployment for this resource does not exist", "you don't have access to the model") ||
		(strings.Contains(s, "model") && strings.Contains(s, "does not exist")) ||
		modelNotFoundRe().MatchString(s)
}

func toolSchemaRejected(s string) bool {
	return containsAny(s, "invalid schema for function", "input_schema", "function.parameters",
		"invalid_function_parameters", "tool schema", "tools[", "json schema is invalid")
}

func rateLimitWords(s string) bool {
	return containsAny(s, "rate limit", "rate_limit", "ratelimit", "too many requests", "throttl",
		"resource_exhausted", "resource has been exhausted", "requests per minute", "tokens per min",
		"concurrency limit", "usage limit", "usage_limit_reached", "quota exceeded for metric")
}

// usageLimitResets: a usage allowance that resets by itself ("The usage
// limit has been reached … resets_at", "5-hour usage limit reached …
// resets at …"): a rate limit, whatever the status says.
func usageLimitResets(s string) bool {
	return containsAny(s, "usage limit", "usage_limit") && containsAny(s, "reset", "try again")
}

func overloadedWords(s string) bool {
	return containsAny(s, "overloaded", "server is busy", "at capacity", "capacity exceeded",
		"capacity_exhausted", "no capacity", "temporarily unavailable", "service unavailable")
}

func timeoutWords(s string) bool {
	return containsAny(s, "timed out", "timeout", "deadline exceeded", "time out",
		"consecutive stale attempts", "provider has been unresponsive")
}

var eofRe = lazy.Regexp(`\beof\b`)

func disconnectWords(s string) bool {
	return containsAny(s, "connection reset", "broken pipe", "connection closed", "server closed",
		"stream ended", "premature close", "socket hang up", "connection aborted", "econnreset",
		"server disconnected without sending a response", "disconnect/reset before headers",
		"remoteprotocolerror", "incomplete chunked read", "peer closed connection") || eofRe().MatchString(s)
}

// connectWords: the request never reached a server (Go, Node and Python
// wordings of refused connections and failed name resolution).
func connectWords(s string) bool {
	return containsAny(s, "connection refused", "no such host", "dial tcp", "network is unreachable",
		"econnrefused", "enotfound", "eai_again", "getaddrinfo", "name or service not known",
		"temporary failure in name resolution", "nodename nor servname", "no route to host", "ehostunreach",
		"enetunreach", "fetch failed", "failed to establish a new connection", "apiconnectionerror",
		"connection error.", "could not resolve host")
}

func certWords(s string) bool {
	return containsAny(s, "x509:", "certificate verify failed", "certificate_verify_failed",
		"certificate signed by unknown authority", "certificate has expired", "failed to verify certificate",
		"certificate is not valid", "self signed certificate", "self-signed certificate",
		"unable to get local issuer certificate")
}

// transientTLSWords: TLS failures that a retry on a new connection fixes
// (a corrupted record, an alert mid-stream, an EOF during the handshake),
// as opposed to certWords, which no retry fixes.
func transientTLSWords(s string) bool {
	return containsAny(s, "tls: ", "tls handshake", "handshake failure", "ssl", "bad record mac",
		"decryption failed", "alert internal error", "unexpected eof while reading", "eof occurred in violation of protocol")
}

func serverErrorWords(s string) bool {
	return containsAny(s, "internal server error", "internal error", "bad gateway", "server_error",
		"upstream connect error", "server had an error", "requires more system memory")
}

func timeoutWordsStrict(s string) bool {
	return containsAny(s, "request timed out after", "deadline exceeded", "etimedout", "readtimeout", "read timeout")
}

// quotaMetricWords: Google's per-metric quota ("Quota exceeded for metric
// …, Please retry in 37s"), which shares OpenAI's billing sentence "You
// exceeded your current quota" but clears by itself.
func quotaMetricWords(s string) bool {
	return containsAny(s, "quota exceeded for metric", "quotaexceeded for metric", "free_tier_requests")
}
