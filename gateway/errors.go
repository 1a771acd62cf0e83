package gateway

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/talaria-agent/talaria/store"
)

// Error codes: stable strings clients branch on (the message may change).
const (
	CodeUnauthorized   = "unauthorized"
	CodeNotFound       = "not_found"
	CodeBadRequest     = "bad_request"
	CodeInvalidJSON    = "invalid_json"
	CodeBodyTooLarge   = "body_too_large"
	CodeSessionBusy    = "session_busy"
	CodeQueueFull      = "queue_full"
	CodeShuttingDown   = "shutting_down"
	CodeNotRunning     = "turn_not_running"
	CodeNoApproval     = "approval_not_found"
	CodeSessionEnded   = "session_ended"
	CodeStoreFailure   = "store_failure"
	CodeInternal       = "internal"
	CodeNotImplemented = "not_supported"
	CodeForbidden      = "forbidden"
	// CodeTooManyFailures: too many failed authentications from one
	// client address (429 with Retry-After).
	CodeTooManyFailures = "too_many_auth_failures"
)

// apiError is an error answer: {"error": {"code": ..., "message": ...}}.
type apiError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func errf(status int, code, msg string) *apiError {
	return &apiError{Status: status, Code: code, Message: msg}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = storeError(err)
	}
	if ae.Status == http.StatusUnauthorized || ae.Status == http.StatusRequestEntityTooLarge {
		// The body is not read: no keep-alive, so the server does not
		// drain it (a slow body would hold the answer back).
		w.Header().Set("Connection", "close")
	}
	writeJSON(w, ae.Status, map[string]any{"error": ae})
}

// storeError maps a store failure to an API error.
func storeError(err error) *apiError {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return errf(http.StatusNotFound, CodeNotFound, "not found")
	case errors.Is(err, store.ErrEnded):
		return errf(http.StatusConflict, CodeSessionEnded, err.Error())
	}
	var se *store.Error
	if errors.As(err, &se) {
		// The cause, never the database's path or DSN.
		return errf(http.StatusServiceUnavailable, CodeStoreFailure, "the database failed ("+se.Op+"): "+se.Kind.Hint())
	}
	return errf(http.StatusInternalServerError, CodeInternal, err.Error())
}

// decodeBody reads a JSON body into v, mapping oversized and malformed
// bodies to their codes. Unknown fields are errors, so typos are caught.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return errf(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "the request body is larger than the limit")
		}
		return errf(http.StatusBadRequest, CodeInvalidJSON, "the body is not the JSON this route takes: "+err.Error())
	}
	if dec.More() {
		return errf(http.StatusBadRequest, CodeInvalidJSON, "trailing data after the JSON body")
	}
	return nil
}
