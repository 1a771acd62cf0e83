package failover

import (
	"strings"
	"time"
)

// Explain renders a classification for people: what happened, whether
// retrying can help, what Talaria does about it, and what the person can do.
// Multi-line plain text without colour. Ambiguous verdicts say so.
func Explain(c Classified) string {
	var b strings.Builder
	line := func(label, text string) {
		if text != "" {
			b.WriteString(label + text + "\n")
		}
	}
	line("What happened: ", sentence(c.Summary))
	if c.ProviderMessage != "" {
		line("Provider said: ", "\""+c.ProviderMessage+"\"")
	}
	if c.UpstreamProvider != "" {
		line("Where: ", "the error came from "+c.UpstreamProvider+", relayed by "+orProvider(c.Provider)+".")
	}
	line("Certainty: ", certainty(c))
	line("Retrying: ", retryText(c))
	line("Talaria: ", actionText(c))
	line("You can: ", c.Advice)
	return b.String()
}

func orProvider(p string) string {
	if p == "" {
		return "the aggregator"
	}
	return p
}

// sentence ends s with a full stop; the first word may be a provider's
// name, so it is not capitalised.
func sentence(s string) string {
	if s == "" {
		return ""
	}
	return s + "."
}

func certainty(c Classified) string {
	switch {
	case c.BillingUnverified:
		return "unverified. The message reads like exhausted billing, but this may also be a content filter rejecting part of the prompt; both are possible."
	case !c.Certain:
		return "best guess. The provider's answer did not say exactly what failed."
	}
	return "" // certain verdicts need no line
}

func retryText(c Classified) string {
	switch {
	case c.Class == ClassCanceled:
		return "not applicable; the request was stopped on this side."
	case c.Retryable && c.RetryAfter > 0:
		return "can help; the provider asks to wait " + c.RetryAfter.Round(time.Millisecond).String() + "."
	case c.Retryable:
		return "can help after a short wait."
	case c.Compress:
		return "the same request will fail again; a shorter one can succeed."
	case c.Class == ClassOutputCap:
		return "the same request will fail again; one with a lower max_tokens can succeed."
	case c.Class.ShapeRepairable():
		return "the same request will fail again; a repaired one can succeed."
	case c.RotateCredential:
		return "not with this key."
	}
	return "will not help with the same request."
}

// actionText says what the retry loop does for this class, in the terms of
// Decide.
func actionText(c Classified) string {
	switch c.Class {
	case ClassCanceled:
		return "stops; nothing is retried."
	case ClassAuth:
		return "switches to another key of this provider if one is configured, else falls back to the next model in the fallback chain, else stops."
	case ClassBilling:
		if c.BillingUnverified {
			return "benches this key for two minutes only, then switches keys or falls back if it can, else stops."
		}
		return "benches this key for an hour, switches to another key or falls back if it can, else stops."
	case ClassRateLimit:
		return "waits (honouring the provider's hint) and retries; after a second rate limit it switches keys, and when retries run out it falls back."
	case ClassUpstreamRateLimit:
		return "falls back to the next route without switching keys; without one it waits and retries."
	case ClassOverloaded, ClassTimeout:
		return "retries with backoff; after repeated failures it falls back if a fallback is configured."
	case ClassServerError, ClassUnknown:
		return "retries with backoff, then falls back if a fallback is configured."
	case ClassContextOverflow, ClassPayloadTooLarge:
		return "compresses the conversation and restarts the step while compression attempts remain, else stops."
	case ClassOutputCap:
		return "lowers max_tokens to the stated limit once and retries; it never falls back for this."
	case ClassModelNotFound, ClassContentPolicyBlocked, ClassEndpointNotFound:
		return "falls back to the next model if one is configured, else stops."
	case ClassLongContextUnavailable:
		return "falls back to the next model if one is configured, else compresses the conversation to fit the standard window."
	case ClassFormatError:
		if c.Fallback {
			return "falls back to the next route if one is configured, else stops."
		}
		return "stops; the same request would be rejected again."
	case ClassProviderPolicyBlocked, ClassSSLCert, ClassAuthPermanent:
		return "stops; neither retrying nor falling back on this account can help."
	case ClassImageUnsupported:
		return "replaces the images with a short note once and retries, so the model answers from the text; then stops if it fails again."
	case ClassThinkingSignature:
		return "drops the replayed thinking blocks (whose signatures the provider refused) once and retries, then stops if it fails again."
	case ClassInvalidEncryptedContent:
		return "drops the replayed encrypted reasoning once and retries without it, then stops if it fails again."
	case ClassToolCallTruncated:
		return "asks the model for a smaller call up to three times, raising max_tokens where the model allows, then stops."
	case ClassReasoningExhausted:
		return "stops after one call; continuing would only produce more reasoning."
	case ClassEmptyResponse:
		return "resends the request (after tool results, with a nudge to go on) a few times, then falls back to the next model if one is configured, else stops."
	}
	if c.Class.ShapeRepairable() {
		return "repairs the request shape once and retries, then stops if it fails again."
	}
	return "retries with backoff."
}

// Rule names a provider-specific rule of Classify.
type Rule string

const (
	// RuleAnthropicErrorTypes reads Anthropic's error types in a body
	// without Anthropic's {"type":"error"} envelope.
	RuleAnthropicErrorTypes Rule = "anthropic_error_types"
	// RuleOpenRouterUpstream reads OpenRouter's relayed upstream rate
	// limits on a 429.
	RuleOpenRouterUpstream Rule = "openrouter_upstream_rate_limit"
	// RuleProviderName puts the provider's name in the advice and in key
	// cooldowns.
	RuleProviderName Rule = "provider_name"
)

// ProviderRulesSkipped lists, for an Input without a provider, the
// provider-specific rules Classify could not apply; nil when the provider
// (or, for a rule, what stands in for it: the wire API, the base URL) is
// known. A front end says what naming the provider might change.
func ProviderRulesSkipped(in Input) []Rule {
	if in.Provider != "" {
		return nil
	}
	var out []Rule
	if in.API == "" {
		out = append(out, RuleAnthropicErrorTypes)
	}
	if !isOpenRouter(in) {
		out = append(out, RuleOpenRouterUpstream)
	}
	return append(out, RuleProviderName)
}
