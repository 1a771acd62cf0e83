package api

// ErrorCode is the stable part of an HTTP API error answer,
// {"error": {"code": ..., "message": ...}}: clients branch on the code, the
// message may change. The server sends these and the Go client reads them.
type ErrorCode string

const (
	CodeUnauthorized   ErrorCode = "unauthorized"
	CodeForbidden      ErrorCode = "forbidden"
	CodeNotFound       ErrorCode = "not_found"
	CodeBadRequest     ErrorCode = "bad_request"
	CodeInvalidJSON    ErrorCode = "invalid_json"
	CodeBodyTooLarge   ErrorCode = "body_too_large"
	CodeNotImplemented ErrorCode = "not_supported"
	CodeInternal       ErrorCode = "internal"
	CodeStoreFailure   ErrorCode = "store_failure"
	CodeShuttingDown   ErrorCode = "shutting_down"

	// A session's turns: one runs at a time; more wait in a bounded queue.
	CodeSessionBusy  ErrorCode = "session_busy"
	CodeQueueFull    ErrorCode = "queue_full"
	CodeSessionEnded ErrorCode = "session_ended"
	CodeNotRunning   ErrorCode = "turn_not_running"
	CodeNoApproval   ErrorCode = "approval_not_found"

	// CodeTooManyFailures: too many failed authentications from one client
	// address (429 with Retry-After).
	CodeTooManyFailures ErrorCode = "too_many_auth_failures"
	// The per-principal limits (serve.limits).
	CodeRateLimited     ErrorCode = "rate_limited"      // requests per second (429, Retry-After)
	CodeLimitReached    ErrorCode = "limit_reached"     // sessions, queued messages, streams, searches (429)
	CodeModelNotAllowed ErrorCode = "model_not_allowed" // provider/model outside the principal's allow-list (400)
)
