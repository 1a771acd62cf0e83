package llmtest

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/llm"
)

// failure is the canonical answer of one class: what a real provider sends.
type failure struct {
	status    int
	errType   string // OpenAI-shaped error.type
	code      string // OpenAI-shaped error.code
	message   string
	header    map[string]string
	raw       string // an aggregator's metadata.raw: the upstream's own body
	transport llm.TransportKind
	cause     error
}

// failures holds one canonical error for every class failover.Classify can
// return; TestFailClasses checks each against the classifier.
var failures = map[failover.Class]failure{
	failover.ClassAuth:                    {status: 401, errType: "invalid_request_error", code: "invalid_api_key", message: "Incorrect API key provided."},
	failover.ClassAuthPermanent:           {status: 401, errType: "invalid_request_error", message: "Your account has been deactivated."},
	failover.ClassBilling:                 {status: 402, errType: "insufficient_quota", code: "insufficient_quota", message: "You exceeded your current quota, please check your plan and billing details."},
	failover.ClassRateLimit:               {status: 429, errType: "requests", code: "rate_limit_exceeded", message: "Rate limit reached for requests.", header: map[string]string{"retry-after-ms": "1"}},
	failover.ClassOverloaded:              {status: 529, errType: "overloaded_error", message: "Overloaded"},
	failover.ClassServerError:             {status: 500, errType: "server_error", message: "The server had an error while processing your request."},
	failover.ClassTimeout:                 {transport: llm.TransportTimeout, message: "read timeout"},
	failover.ClassSSLCert:                 {transport: llm.TransportTLSCert, message: "x509: certificate signed by unknown authority"},
	failover.ClassContextOverflow:         {status: 400, errType: "invalid_request_error", code: "context_length_exceeded", message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."},
	failover.ClassPayloadTooLarge:         {status: 413, errType: "request_too_large", message: "Request exceeds the maximum allowed number of bytes."},
	failover.ClassImageTooLarge:           {status: 400, errType: "invalid_request_error", message: "messages.0.content.1.image.source.base64: image exceeds 5 MB maximum"},
	failover.ClassImageCorrupt:            {status: 400, errType: "invalid_request_error", message: "Could not process image"},
	failover.ClassModelNotFound:           {status: 404, errType: "invalid_request_error", code: "model_not_found", message: "The model `missing` does not exist or you do not have access to it."},
	failover.ClassContentPolicyBlocked:    {status: 400, errType: "invalid_request_error", code: "content_policy_violation", message: "Your request was rejected as a result of our safety system."},
	failover.ClassFormatError:             {status: 400, errType: "invalid_request_error", message: "Invalid value for 'messages': expected an array."},
	failover.ClassOutputCap:               {status: 400, errType: "invalid_request_error", message: "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for this model"},
	failover.ClassRoleAlternation:         {status: 400, errType: "invalid_request_error", message: "messages: roles must alternate between \"user\" and \"assistant\", but found multiple \"user\" roles in a row"},
	failover.ClassThinkingSignature:       {status: 400, errType: "invalid_request_error", message: "messages.1.content.0: Invalid `signature` in `thinking` block"},
	failover.ClassInvalidEncryptedContent: {status: 400, errType: "invalid_request_error", code: "invalid_encrypted_content", message: "The encrypted content could not be verified."},
	failover.ClassEndpointNotFound:        {status: 404, message: "404 page not found"},
	failover.ClassUpstreamRateLimit: {status: 429, code: "429", message: "Provider returned error", header: map[string]string{"retry-after-ms": "1"},
		raw: `{"error":{"message":"Rate limit exceeded","type":"rate_limit_error"}}`},
	failover.ClassProviderPolicyBlocked:  {status: 404, message: "No endpoints found matching your data policy. Configure: https://openrouter.ai/settings/privacy"},
	failover.ClassReasoningMandatory:     {status: 400, errType: "invalid_request_error", message: "Reasoning is mandatory for this endpoint and cannot be disabled."},
	failover.ClassMultimodalToolContent:  {status: 400, errType: "invalid_request_error", message: "Invalid 'messages[2]': role 'tool' contains an image."},
	failover.ClassLlamaCppGrammar:        {status: 400, errType: "invalid_request_error", message: "failed to parse grammar"},
	failover.ClassImageUnsupported:       {status: 400, errType: "invalid_request_error", message: "This model does not support image input."},
	failover.ClassLongContextUnavailable: {status: 400, errType: "invalid_request_error", message: "The long context beta is not yet available for this subscription."},
	failover.ClassCanceled:               {transport: llm.TransportCanceled, cause: context.Canceled},
	failover.ClassUnknown:                {status: 409, message: "Conflict"},
}

// Fail is a call that fails with an [*llm.APIError] that
// [failover.Classify] puts in class c: for an HTTP class the status, body
// and headers a real OpenAI-compatible API sends (a rate limit carries
// retry-after-ms: 1, so retries do not wait), for a transport class the
// transport failure. A class Classify never returns (the engine's own
// classes, turn classes) panics: it cannot come from a provider.
func Fail(c failover.Class) Step {
	f, ok := failures[c]
	if !ok {
		panic("llmtest: no provider error has failover class " + string(c))
	}
	return Step{Err: f.apiError()}
}

// FailAfter streams partial text, then fails mid-stream with class c.
func FailAfter(partial string, c failover.Class) Step {
	st := Fail(c)
	st.Text = partial
	return st
}

func (f failure) apiError() *llm.APIError {
	e := &llm.APIError{StatusCode: f.status, Message: f.message, Transport: f.transport, Err: f.cause}
	if f.status != 0 {
		e.Header = http.Header{}
		e.Header.Set("Content-Type", "application/json")
		for k, v := range f.header {
			e.Header.Set(k, v)
		}
		body := map[string]any{"message": f.message}
		if f.errType != "" {
			body["type"] = f.errType
		}
		if f.code != "" {
			body["code"] = f.code
		}
		if f.raw != "" {
			body["metadata"] = map[string]any{"raw": f.raw, "provider_name": "Upstream"}
		}
		e.Body, _ = json.Marshal(map[string]any{"error": body})
	}
	return e
}
