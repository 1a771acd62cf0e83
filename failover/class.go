package failover

// Class names one kind of provider failure (an error of a model call, or
// an answer no retry makes usable); each class has a distinct recovery. A
// turn's own endings (persistence, panic, busy, ...) are turn.Exit values,
// not classes: no name is in both.
type Class string

// The failure vocabulary of DESIGN.md ("Error classes").
const (
	ClassAuth                    Class = "auth"
	ClassAuthPermanent           Class = "auth_permanent"
	ClassBilling                 Class = "billing"
	ClassRateLimit               Class = "rate_limit"
	ClassUpstreamRateLimit       Class = "upstream_rate_limit"
	ClassOverloaded              Class = "overloaded"
	ClassServerError             Class = "server_error"
	ClassTimeout                 Class = "timeout"
	ClassSSLCert                 Class = "ssl_cert_verification"
	ClassContextOverflow         Class = "context_overflow"
	ClassPayloadTooLarge         Class = "payload_too_large"
	ClassImageTooLarge           Class = "image_too_large"
	ClassImageCorrupt            Class = "image_corrupt"
	ClassModelNotFound           Class = "model_not_found"
	ClassProviderPolicyBlocked   Class = "provider_policy_blocked"
	ClassContentPolicyBlocked    Class = "content_policy_blocked"
	ClassFormatError             Class = "format_error"
	ClassOutputCap               Class = "output_cap"
	ClassRoleAlternation         Class = "role_alternation"
	ClassThinkingSignature       Class = "thinking_signature"
	ClassInvalidEncryptedContent Class = "invalid_encrypted_content"
	ClassReasoningMandatory      Class = "reasoning_mandatory"
	ClassMultimodalToolContent   Class = "multimodal_tool_content_unsupported"
	ClassLlamaCppGrammar         Class = "llama_cpp_grammar_pattern"
	// ClassImageUnsupported: the model takes no images at all (a text-only
	// model, a route without vision); the images are replaced by a note
	// and the request retried once.
	ClassImageUnsupported Class = "image_unsupported"
	// ClassEndpointNotFound: a 404 that is not about a model (a wrong base
	// URL or path, a proxy's page): no model change or retry helps on this
	// route; another route may work.
	ClassEndpointNotFound Class = "endpoint_not_found"
	// ClassLongContextUnavailable: Anthropic refused the long-context (1M)
	// beta for this account; the request must fit the standard window or
	// go to another route.
	ClassLongContextUnavailable Class = "long_context_unavailable"
	// ClassToolCallTruncated: the output limit cut a tool call's arguments
	// (finish "length" with unparsable arguments). The engine asks for a
	// smaller call, raising the cap where the model allows, at most three
	// times; the turn then fails with this class. Never from Classify.
	ClassToolCallTruncated Class = "tool_call_truncated"
	// ClassReasoningExhausted: the model spent the whole output budget on
	// reasoning and wrote no answer; continuing only produces more
	// reasoning. Never from Classify.
	ClassReasoningExhausted Class = "reasoning_exhausted_output"
	// ClassEmptyResponse: the model kept answering with nothing at all (no
	// text, no tool call) after the empty-answer retries. Never from
	// Classify.
	ClassEmptyResponse Class = "empty_response"
	// ClassCanceled is the caller's own context ending: never retried and
	// never blamed on the provider.
	ClassCanceled Class = "canceled"
	ClassUnknown  Class = "unknown"
)

// recovery is the default recovery profile of a class; Classify may adjust
// it for one error (a format error that another route could accept, an
// upstream rate limit that must not rotate the key).
type recovery struct {
	retryable, rotate, fallback, compress bool
}

// recoveryOf is the constant table behind Classified's flags. Retryable
// means "sending the same request again, after a wait, may succeed";
// request-shape failures are not retryable even though a repaired request
// may well succeed. ok is false for a class outside the vocabulary.
func recoveryOf(c Class) (r recovery, ok bool) {
	switch c {
	case ClassAuth, ClassBilling:
		return recovery{rotate: true, fallback: true}, true
	case ClassRateLimit:
		return recovery{retryable: true, rotate: true, fallback: true}, true
	case ClassUpstreamRateLimit, ClassOverloaded, ClassServerError, ClassTimeout, ClassUnknown:
		return recovery{retryable: true, fallback: true}, true
	case ClassContextOverflow, ClassPayloadTooLarge:
		return recovery{compress: true}, true
	case ClassModelNotFound, ClassContentPolicyBlocked, ClassEndpointNotFound:
		return recovery{fallback: true}, true
	case ClassLongContextUnavailable:
		return recovery{fallback: true, compress: true}, true
	case ClassAuthPermanent, ClassSSLCert, ClassProviderPolicyBlocked, ClassFormatError, ClassOutputCap,
		ClassImageTooLarge, ClassImageCorrupt, ClassRoleAlternation, ClassThinkingSignature,
		ClassInvalidEncryptedContent, ClassReasoningMandatory, ClassMultimodalToolContent,
		ClassLlamaCppGrammar, ClassCanceled, ClassImageUnsupported, ClassToolCallTruncated,
		ClassReasoningExhausted, ClassEmptyResponse:
		return recovery{}, true
	}
	return recovery{}, false
}

// Classes lists every class, in the order of DESIGN.md's table, then the
// ones only the engine decides.
func Classes() []Class {
	return []Class{
		ClassAuth, ClassAuthPermanent, ClassBilling, ClassRateLimit, ClassUpstreamRateLimit,
		ClassOverloaded, ClassServerError, ClassTimeout, ClassSSLCert, ClassContextOverflow,
		ClassPayloadTooLarge, ClassImageTooLarge, ClassImageCorrupt, ClassModelNotFound,
		ClassProviderPolicyBlocked, ClassContentPolicyBlocked, ClassFormatError, ClassOutputCap,
		ClassRoleAlternation, ClassThinkingSignature, ClassInvalidEncryptedContent,
		ClassReasoningMandatory, ClassMultimodalToolContent, ClassLlamaCppGrammar,
		ClassImageUnsupported, ClassEndpointNotFound, ClassLongContextUnavailable,
		ClassToolCallTruncated, ClassReasoningExhausted, ClassEmptyResponse,
		ClassCanceled, ClassUnknown,
	}
}

// ShapeRepairable reports whether the class is a request-shape rejection
// that the engine repairs once and retries (strip thinking blocks, merge
// roles, drop images, relax a tool schema …).
func (c Class) ShapeRepairable() bool {
	switch c {
	case ClassRoleAlternation, ClassThinkingSignature, ClassInvalidEncryptedContent,
		ClassReasoningMandatory, ClassMultimodalToolContent, ClassLlamaCppGrammar,
		ClassImageTooLarge, ClassImageCorrupt, ClassImageUnsupported:
		return true
	}
	return false
}

// EngineOnly reports whether the class is decided by the turn engine from
// an answer (a cut tool call, a thinking-only or empty reply), never by
// Classify from an error.
func (c Class) EngineOnly() bool {
	return c == ClassToolCallTruncated || c == ClassReasoningExhausted || c == ClassEmptyResponse
}

// CooldownClass reads a key cooldown's stored reason: a class name, or the
// marker of an unverified billing verdict; a cooldown with no reason was a
// rate limit.
func CooldownClass(reason string) (c Class, billingUnverified bool) {
	switch reason {
	case ReasonBillingUnverified:
		return ClassBilling, true
	case "":
		return ClassRateLimit, false
	}
	return Class(reason), false
}
