package failover

import (
	"fmt"
	"strconv"
	"time"
)

// who names the failing provider for people, crediting the upstream behind
// an aggregator.
// Who names the provider of a failure as a person knows it: its entry
// name, or for a --base-url server (entry "custom") the server's URL.
func (c Classified) Who() string { return who(c) }

func who(c Classified) string {
	p := c.Provider
	switch {
	case p == "":
		p = "the provider"
	case p == "custom" && c.BaseURL != "":
		// Every --base-url server is entry "custom"; name the one meant.
		p = "the server at " + c.BaseURL
	}
	if c.UpstreamProvider != "" {
		p += " (upstream " + c.UpstreamProvider + ")"
	}
	return p
}

func statusSuffix(c Classified) string {
	if c.Status == 0 {
		return ""
	}
	return " (" + strconv.Itoa(c.Status) + ")"
}

func modelName(c Classified) string {
	if c.Model == "" {
		return "the model"
	}
	return c.Model
}

// providerPredicates are the summaries that are the provider, a fixed
// predicate and the status.
var providerPredicates = map[Class]string{
	ClassAuthPermanent:           "account access is disabled",
	ClassUpstreamRateLimit:       "relayed an upstream rate limit",
	ClassOverloaded:              "overloaded",
	ClassServerError:             "server error",
	ClassProviderPolicyBlocked:   "account policy blocks this model",
	ClassContentPolicyBlocked:    "content filter blocked the request",
	ClassFormatError:             "rejected the request format",
	ClassRoleAlternation:         "requires alternating user/assistant roles",
	ClassThinkingSignature:       "rejected a thinking-block signature",
	ClassInvalidEncryptedContent: "could not verify replayed encrypted reasoning",
	ClassMultimodalToolContent:   "does not accept images in tool results",
	ClassLongContextUnavailable:  "refused the long-context beta for this account",
}

// summary is the short status-line phrase.
func summary(c Classified) string {
	if c.unreachable() {
		return unreachableSummary(c)
	}
	p, s := who(c), statusSuffix(c)
	if predicate, ok := providerPredicates[c.Class]; ok {
		return p + " " + predicate + s
	}
	switch c.Class {
	case ClassAuth:
		if c.NoKeyHint != "" {
			return p + " wants an API key and none was sent" + s
		}
		return p + " rejected the credential" + s
	case ClassBilling:
		if c.BillingUnverified {
			return p + " reports usage exhausted, unverified" + s
		}
		return p + " account is out of credit" + s
	case ClassRateLimit:
		return "rate limited by " + p + s
	case ClassTimeout:
		if c.Status == 0 {
			return "connection to " + p + " timed out or dropped"
		}
		return p + " timed out" + s
	case ClassSSLCert:
		return "TLS certificate of " + p + " could not be verified"
	case ClassContextOverflow:
		if !c.Certain {
			return "request probably too long for " + modelName(c) + s
		}
		return "conversation too long for " + modelName(c) + s
	case ClassPayloadTooLarge:
		return "request body too large for " + p + s
	case ClassImageTooLarge:
		return "an image is too large for " + modelName(c) + s
	case ClassImageCorrupt:
		return modelName(c) + " could not read an image" + s
	case ClassModelNotFound:
		return modelName(c) + " not found at " + p + s
	case ClassOutputCap:
		if c.OutputCapLimit > 0 {
			return fmt.Sprintf("max_tokens above %s's limit of %d%s", modelName(c), c.OutputCapLimit, s)
		}
		return "max_tokens above " + modelName(c) + "'s limit" + s
	case ClassReasoningMandatory:
		return modelName(c) + " requires reasoning to stay on" + s
	case ClassLlamaCppGrammar:
		return "llama.cpp could not compile a tool schema to a grammar" + s
	case ClassImageUnsupported:
		return modelName(c) + " does not accept images" + s
	case ClassEndpointNotFound:
		if c.Malformed {
			return p + " sent a malformed response" + s
		}
		return p + " has no such endpoint" + s
	case ClassToolCallTruncated:
		return "a tool call of " + modelName(c) + " was cut off by the output limit"
	case ClassReasoningExhausted:
		return modelName(c) + " spent its output budget on reasoning"
	case ClassEmptyResponse:
		return modelName(c) + " keeps returning empty answers"
	case ClassCanceled:
		return "request canceled by the caller"
	}
	return p + " call failed" + s
}

// advice is one sentence a person can act on.
func advice(c Classified) string {
	if c.unreachable() {
		return Unreachable(c.Provider, c.BaseURL, c.Connect, "")
	}
	switch c.Class {
	case ClassAuth:
		if c.NoKeyHint != "" {
			return "No API key was sent to " + who(c) + ", and it asks for one: " + c.NoKeyHint + "."
		}
		return "The API key was refused; retrying with it will not help. Check the key for " + who(c) + " (expired, revoked or mistyped) or add another."
	case ClassAuthPermanent:
		return "The account behind this key is disabled; no retry or other key of the same account helps. Contact the provider or configure a different provider."
	case ClassBilling:
		if c.BillingUnverified {
			return "The provider says the usage allowance is exhausted, but this message is also sent when a content filter rejects part of the prompt; if your usage page still shows quota, suspect the content (for example the system prompt), not your balance."
		}
		return "The account has no credit or quota left; retrying will not help until you add credit or raise the spending limit at " + who(c) + "."
	case ClassRateLimit:
		return "Too many requests or tokens for this key right now; waiting helps" + untilText(c) + ", and another key or provider avoids the wait."
	case ClassUpstreamRateLimit:
		return "The aggregator's upstream provider is rate limited, not your key; waiting helps, or route to another upstream provider or model."
	case ClassOverloaded:
		return "The provider is temporarily overloaded; retrying after a short wait usually works, and a fallback model avoids the wait."
	case ClassServerError:
		return "The provider had an internal error; retrying usually works. If it persists, check the provider's status page."
	case ClassTimeout:
		return "The connection timed out or dropped before an answer; retrying usually works. If it keeps happening, check the network or proxy between you and the provider."
	case ClassSSLCert:
		return "The server's TLS certificate failed verification, so Talaria stopped without sending the request; check the base URL, the system clock and any intercepting proxy, or install the right CA certificate."
	case ClassContextOverflow:
		if !c.Certain {
			return "The provider gave no reason, but the conversation is very large, so it was most likely too long for the model; compressing it should help, or start a new session."
		}
		return "The conversation no longer fits the model's context window; compressing older turns fixes it, or start a new session or use a model with a larger window."
	case ClassPayloadTooLarge:
		return "The request body exceeds the provider's size limit (often large tool results or images); compressing or removing large attachments fixes it."
	case ClassImageTooLarge:
		return "An image exceeds the model's size or dimension limit; resize it or remove it from the conversation."
	case ClassImageCorrupt:
		return "The model could not decode an image (corrupt or unsupported format); remove it or convert it to PNG or JPEG."
	case ClassModelNotFound:
		if !c.Certain {
			return "The endpoint answered 404; check the model name and the base URL, or choose another model."
		}
		return "The model name is wrong or not available to this key; check the spelling, pull or enable the model, or choose another."
	case ClassProviderPolicyBlocked:
		return "Your account's privacy or routing settings exclude every endpoint for this model, so no retry or fallback on this account helps; change the settings (for OpenRouter: openrouter.ai/settings/privacy) or pick another model."
	case ClassContentPolicyBlocked:
		return "The provider's safety filter rejected the prompt or the answer; retrying the same text will not help. Rephrase the request or use another provider."
	case ClassFormatError:
		if c.Fallback {
			return "This route rejected a parameter or tool definition that another route may accept; check the model's supported parameters and tool schemas."
		}
		return "The provider rejected the request as malformed; retrying the same request will not help. The provider message says what to change."
	case ClassOutputCap:
		return "The requested output length exceeds what the model can produce; lowering max_tokens to the model's limit fixes it."
	case ClassEndpointNotFound:
		if c.Malformed {
			return "The server answered " + strconv.Itoa(c.Status) + " with a body that is not a model answer (a malformed response), so there was nothing to retry or price; the base URL most likely points at another service or a proxy page: check the provider's base URL."
		}
		return "The server answered 404 for the API path itself, not for a model: the base URL is most likely wrong (a missing or extra /v1, the native API instead of the OpenAI-compatible one, a proxy path). Check the provider's base URL."
	case ClassLongContextUnavailable:
		return "The account cannot use the long-context (1M token) beta. Remove the context-1m beta header from the provider's headers, or use a model or account with the larger window; the conversation must fit the standard window."
	case ClassImageUnsupported:
		return "This model cannot read images; Talaria replaces them with a note and retries once. To have images read, use a vision-capable model."
	case ClassThinkingSignature:
		return "The provider refused the signature of a replayed thinking block (often after switching models or keys, or an edited transcript); Talaria drops the replayed thinking and retries once."
	case ClassInvalidEncryptedContent:
		return "The provider could not decrypt replayed reasoning (often after switching accounts, organisations or models); Talaria drops it and retries once."
	case ClassToolCallTruncated:
		return "The model's tool call did not fit its output limit. Raise max_tokens (or the model's max_output), or ask for the work in smaller steps, e.g. write a large file in parts."
	case ClassReasoningExhausted:
		return "The model used all of max_tokens on reasoning and wrote no answer. Raise max_tokens, or lower the thinking budget or reasoning effort."
	case ClassRoleAlternation, ClassReasoningMandatory,
		ClassMultimodalToolContent, ClassLlamaCppGrammar:
		return "The provider rejected the shape of the conversation; Talaria repairs it once and retries. If it still fails, start a new session or switch models."
	case ClassEmptyResponse:
		return "The model answered with nothing at all, again and again; rephrase the request, or configure a fallback model."
	case ClassCanceled:
		return "The request was canceled on this side (interrupt or shutdown); the provider did nothing wrong."
	}
	return "The failure was not recognised; Talaria retries it with backoff. If it keeps failing, report it with the logged error."
}

func untilText(c Classified) string {
	switch {
	case !c.ResetAt.IsZero():
		return " (the limit resets at " + c.ResetAt.Local().Format(time.TimeOnly) + ")"
	case c.RetryAfter > 0:
		return " (the provider asks for " + c.RetryAfter.Round(time.Millisecond).String() + ")"
	}
	return ""
}
