package failover

import (
	"strings"

	"github.com/talaria-agent/talaria/llm"
)

// The stages of Classify, in the order it runs them.

// byProviderShape recognises bodies whose shape says what happened whatever
// the status: Azure's content filter, Anthropic's and Google's typed errors,
// llama.cpp, Ollama and vLLM local-server errors, OpenRouter's policy walls.
func byProviderShape(f *facts) (verdict, bool) {
	for _, l := range f.layers {
		if l.Code == "content_filter" || l.InnerCode == "ResponsibleAIPolicyViolation" {
			return verdict{class: ClassContentPolicyBlocked}, true
		}
	}
	for i := len(f.layers) - 1; i >= 0; i-- {
		l := f.layers[i]
		if l.Type == "exceed_context_size_error" {
			return is(ClassContextOverflow), true
		}
		if v, ok := anthropicType(l); ok {
			return v, true
		}
		if v, ok := googleStatus(l); ok {
			return v, true
		}
	}
	t := f.text
	switch {
	case longContextUnavailable(t):
		return is(ClassLongContextUnavailable), true // Anthropic, any status
	case containsAny(t, "exceeds the available context size", "the input length exceeds the context length"):
		return is(ClassContextOverflow), true // llama.cpp server, Ollama
	case grammarPattern(t):
		return is(ClassLlamaCppGrammar), true
	case strings.Contains(t, "try pulling it first"):
		return is(ClassModelNotFound), true // Ollama
	case strings.Contains(t, "maximum context length is") && containsAny(t, "however, you requested", "your request has", "max_model_len"):
		// vLLM (and OpenAI's older wording); the output-cap form says
		// "'max_tokens' … is too large" and is clamped, not compressed.
		if limit, ok := outputCap(t); ok {
			return capVerdict(limit), true
		}
		return is(ClassContextOverflow), true
	case providerPolicy(t) && (f.status == 0 || f.status == 404 || f.status == 403 || f.status == 400 || f.status == 502):
		return is(ClassProviderPolicyBlocked), true // OpenRouter
	}
	return verdict{}, false
}

// anthropicType maps Anthropic's error.type; invalid_request_error covers
// too much and is left to the message stage.
func anthropicType(l errLayer) (verdict, bool) {
	if !l.Anthropic {
		return verdict{}, false
	}
	msg := strings.ToLower(l.Message)
	switch l.Type {
	case "overloaded_error":
		return is(ClassOverloaded), true
	case "rate_limit_error":
		return is(ClassRateLimit), true
	case "api_error":
		// A 500 api_error whose message is "Overloaded" is the overload,
		// retried the same way but counted as such (fallback after two).
		if strings.Contains(msg, "overloaded") {
			return is(ClassOverloaded), true
		}
		return is(ClassServerError), true
	case "timeout_error":
		return is(ClassTimeout), true
	case "authentication_error":
		if authPermanentWords(msg) {
			return is(ClassAuthPermanent), true
		}
		return is(ClassAuth), true
	case "permission_error":
		switch {
		case billingWords(msg, true):
			return is(ClassBilling), true
		case authPermanentWords(msg):
			return is(ClassAuthPermanent), true
		}
		return is(ClassAuth), true
	case "not_found_error":
		return is(ClassModelNotFound), true
	case "request_too_large":
		return is(ClassPayloadTooLarge), true
	case "billing_error":
		return is(ClassBilling), true
	}
	return verdict{}, false
}

// googleStatus maps Google's status enum (Gemini's OpenAI-compatible
// endpoint, Vertex); INVALID_ARGUMENT is refined by the later stages unless
// it is a bad API key.
func googleStatus(l errLayer) (verdict, bool) {
	msg := strings.ToLower(l.Message)
	switch l.Status {
	case "RESOURCE_EXHAUSTED":
		// Per-minute quotas; "check quota" here is a rate limit, not billing.
		return is(ClassRateLimit), true
	case "UNAVAILABLE":
		return is(ClassOverloaded), true
	case "DEADLINE_EXCEEDED":
		return is(ClassTimeout), true
	case "INTERNAL":
		return is(ClassServerError), true
	case "UNAUTHENTICATED", "PERMISSION_DENIED":
		if billingWords(msg, true) {
			return is(ClassBilling), true
		}
		return is(ClassAuth), true
	case "NOT_FOUND":
		return is(ClassModelNotFound), true
	case "INVALID_ARGUMENT":
		for _, r := range l.Reasons {
			if r == "API_KEY_INVALID" {
				return is(ClassAuth), true
			}
		}
		if strings.Contains(msg, "api key not valid") {
			return is(ClassAuth), true
		}
	}
	return verdict{}, false
}

// byStatus classifies by HTTP status, consulting codes and text where one
// status covers several failures.
func byStatus(f *facts) (verdict, bool) {
	t, s := f.text, f.status
	switch {
	case s < 400:
		return verdict{}, false
	case s == 401:
		switch {
		case billingWords(t, true):
			return is(ClassBilling), true
		case authPermanentWords(t):
			return is(ClassAuthPermanent), true
		}
		return is(ClassAuth), true
	case s == 402:
		// "402 … try again in an hour" / "… resets at midnight" is a limit
		// that clears by itself; otherwise the account needs money.
		if f.hints.specific || usageLimitResets(t) {
			return is(ClassRateLimit), true
		}
		return is(ClassBilling), true
	case s == 403:
		switch {
		case billingWords(t, true):
			return is(ClassBilling), true
		case providerPolicy(t):
			return is(ClassProviderPolicyBlocked), true
		case contentPolicy(t):
			return is(ClassContentPolicyBlocked), true
		case authPermanentWords(t):
			return is(ClassAuthPermanent), true
		}
		return is(ClassAuth), true
	case s == 404:
		// Only a 404 about a model is model_not_found; one that names a
		// page or path, or says nothing, is most likely a wrong base URL.
		if modelNotFound(t) {
			return is(ClassModelNotFound), true
		}
		return verdict{class: ClassEndpointNotFound, uncertain: !endpointNotFound(t)}, true
	case s == 408:
		return is(ClassTimeout), true
	case s == 409:
		return verdict{class: ClassUnknown, uncertain: true}, true
	case s == 413:
		return is(ClassPayloadTooLarge), true
	case s == 429:
		return f.tooManyRequests(), true
	case s == 503 || s == 529:
		if contextOverflowStrict(t) {
			return is(ClassContextOverflow), true
		}
		return is(ClassOverloaded), true
	case s >= 500:
		// 5xx bodies are not searched for request-shape words: some echo
		// the request, and the failure is the server's either way. An
		// unmistakable overflow is the exception (vLLM and LiteLLM answer
		// some with a 500): retrying it only fails again, compressing fixes it.
		if v, ok := byCode(f); ok && v.class == ClassContextOverflow {
			return v, true
		}
		if contextOverflowStrict(t) {
			return is(ClassContextOverflow), true
		}
		if overloadedWords(t) {
			return is(ClassOverloaded), true
		}
		return is(ClassServerError), true
	}
	return f.badRequest(), true
}

func (f *facts) tooManyRequests() verdict {
	t := f.text
	// A relayed output-cap rejection inside a 429 is fixed by one clamp,
	// never by waiting or falling back.
	if limit, ok := outputCap(t); ok {
		return capVerdict(limit)
	}
	if v, ok := byCode(f); ok && v.class == ClassBilling {
		return v
	}
	// A 429 that says the server is overloaded is not about this key:
	// rotating it or cooling it down would be wrong.
	if overloadedWords(t) && !rateLimitWords(t) {
		return is(ClassOverloaded)
	}
	if usageLimitResets(t) || quotaMetricWords(t) {
		return is(ClassRateLimit)
	}
	if billingWords(t, false) && !f.hints.specific {
		return verdict{class: ClassBilling, unverified: billingUnverified(t) && !billingWords(t, true)}
	}
	return is(ClassRateLimit)
}

// badRequest refines a 400, 422 or other 4xx.
func (f *facts) badRequest() verdict {
	t := f.text
	if v, ok := firstShape(t); ok {
		return v
	}
	if v, ok := byCode(f); ok {
		return v
	}
	if v, ok := requestShape(t); ok {
		return v
	}
	if f.emptyBody {
		// An empty 400 on a very large session is most likely an overflow
		// the server did not bother to explain.
		if f.large() {
			return verdict{class: ClassContextOverflow, uncertain: true}
		}
		return verdict{class: ClassFormatError, uncertain: true}
	}
	if rateLimitWords(t) {
		return is(ClassRateLimit) // some gateways answer 400 to throttling
	}
	return is(ClassFormatError)
}

// firstShape holds the patterns that must run before any other 4xx
// refinement: "unsupported parameter … max_tokens" is a format error, and
// "max_tokens is too large" a clamp, not an overflow.
func firstShape(t string) (verdict, bool) {
	if unsupportedParam(t) {
		return verdict{class: ClassFormatError, fallback: true}, true
	}
	if limit, ok := outputCap(t); ok {
		return capVerdict(limit), true
	}
	return verdict{}, false
}

func capVerdict(limit int) verdict {
	if limit < 0 {
		return is(ClassContextOverflow) // the input alone fills the window
	}
	return verdict{class: ClassOutputCap, capLimit: limit}
}

// requestShape matches the message patterns of request rejections, most
// specific first.
func requestShape(t string) (verdict, bool) {
	switch {
	case throttleWords(t):
		return is(ClassRateLimit), true
	case thinkingSignature(t):
		return is(ClassThinkingSignature), true
	case encryptedContent(t):
		return is(ClassInvalidEncryptedContent), true
	case reasoningMandatory(t):
		return is(ClassReasoningMandatory), true
	case roleAlternation(t):
		return is(ClassRoleAlternation), true
	case multimodalToolContent(t):
		return is(ClassMultimodalToolContent), true
	case imageUnsupported(t):
		return is(ClassImageUnsupported), true
	case imageTooLarge(t):
		return is(ClassImageTooLarge), true
	case imageCorrupt(t):
		return is(ClassImageCorrupt), true
	case grammarPattern(t):
		return is(ClassLlamaCppGrammar), true
	case contextOverflow(t):
		return is(ClassContextOverflow), true
	case payloadTooLarge(t):
		return is(ClassPayloadTooLarge), true
	case providerPolicy(t):
		return is(ClassProviderPolicyBlocked), true
	case contentPolicy(t):
		return is(ClassContentPolicyBlocked), true
	case billingUnverified(t) && !billingWords(t, true):
		// Anthropic answers some content-filter rejections with "You're
		// out of extra usage": billing, but unverified.
		return verdict{class: ClassBilling, unverified: true, uncertain: true}, true
	case billingWords(t, true) && !quotaMetricWords(t):
		return is(ClassBilling), true
	case authPermanentWords(t):
		return is(ClassAuthPermanent), true
	case authWords(t):
		return is(ClassAuth), true
	case modelNotFound(t):
		return is(ClassModelNotFound), true
	case toolSchemaRejected(t):
		// Another provider may accept the same tool schema.
		return verdict{class: ClassFormatError, fallback: true}, true
	}
	return verdict{}, false
}

// byCode reads OpenAI-style error codes and types (also used by vLLM,
// OpenRouter, Azure and most OpenAI-compatible servers), innermost first.
func byCode(f *facts) (verdict, bool) {
	for i := len(f.layers) - 1; i >= 0; i-- {
		l := f.layers[i]
		code, typ := strings.ToLower(l.Code), strings.ToLower(l.Type)
		switch {
		case code == "insufficient_quota" || typ == "insufficient_quota":
			return is(ClassBilling), true
		case code == "context_length_exceeded":
			return is(ClassContextOverflow), true
		case code == "invalid_api_key":
			return is(ClassAuth), true
		case code == "model_not_found":
			return is(ClassModelNotFound), true
		case code == "unsupported_parameter" || code == "unsupported_value":
			return verdict{class: ClassFormatError, fallback: true}, true
		case code == "invalid_encrypted_content":
			return is(ClassInvalidEncryptedContent), true
		case code == "content_policy_violation" || code == "invalid_prompt":
			return is(ClassContentPolicyBlocked), true
		case code == "rate_limit_exceeded" || typ == "tokens" || typ == "requests":
			return is(ClassRateLimit), true
		case code == "server_error" || typ == "server_error":
			return is(ClassServerError), true
		}
	}
	return verdict{}, false
}

// byMessage classifies by text alone: errors without an HTTP status (a
// mid-stream error event, a client library's message).
func byMessage(f *facts) (verdict, bool) {
	t := f.text
	if t == "" {
		return verdict{}, false
	}
	if certWords(t) {
		return is(ClassSSLCert), true
	}
	if v, ok := firstShape(t); ok {
		return v, true
	}
	if v, ok := requestShape(t); ok {
		return v, true
	}
	switch {
	case overloadedWords(t):
		return is(ClassOverloaded), true
	case rateLimitWords(t):
		return is(ClassRateLimit), true
	case connectWords(t):
		// Nothing reached a server: never an overflow, whatever the size.
		return is(ClassTimeout), true
	case timeoutWords(t), timeoutWordsStrict(t):
		return is(ClassTimeout), true
	case disconnectWords(t):
		return f.disconnect(), true
	case transientTLSWords(t):
		return is(ClassTimeout), true
	case serverErrorWords(t):
		return is(ClassServerError), true
	}
	return verdict{}, false
}

// byTransport classifies failures with no HTTP answer by their kind.
func byTransport(f *facts) (verdict, bool) {
	switch f.in.Transport {
	case llm.TransportTLSCert:
		return is(ClassSSLCert), true
	case llm.TransportTimeout, llm.TransportConnect, llm.TransportTLS:
		return is(ClassTimeout), true
	case llm.TransportReset, llm.TransportEOF:
		return f.disconnect(), true
	}
	return verdict{}, false
}

// disconnect: a bare disconnect before any answer, on a very large
// request, is most likely the server giving up on an oversized prompt.
// Once the stream has started the request was accepted, so it is not.
func (f *facts) disconnect() verdict {
	if f.large() && !f.in.MidStream {
		return verdict{class: ClassContextOverflow, uncertain: true}
	}
	return is(ClassTimeout)
}
