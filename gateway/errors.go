package gateway

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/store"
)

// apiError is an error answer: {"error": {"code": ..., "message": ...}}.
type apiError struct {
	Status  int           `json:"-"`
	Code    api.ErrorCode `json:"code"`
	Message string        `json:"message"`
}

func (e *apiError) Error() string { return string(e.Code) + ": " + e.Message }

func errf(status int, code api.ErrorCode, msg string) *apiError {
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
		return errf(http.StatusNotFound, api.CodeNotFound, "not found")
	case errors.Is(err, store.ErrEnded):
		return errf(http.StatusConflict, api.CodeSessionEnded, err.Error())
	}
	var se *store.Error
	if errors.As(err, &se) {
		// The cause, never the database's path or DSN.
		return errf(http.StatusServiceUnavailable, api.CodeStoreFailure, "the database failed ("+se.Op+"): "+se.Kind.Hint())
	}
	return errf(http.StatusInternalServerError, api.CodeInternal, err.Error())
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
			return errf(http.StatusRequestEntityTooLarge, api.CodeBodyTooLarge, "the request body is larger than the limit")
		}
		return errf(http.StatusBadRequest, api.CodeInvalidJSON, "the body is not the JSON this route takes: "+err.Error())
	}
	if dec.More() {
		return errf(http.StatusBadRequest, api.CodeInvalidJSON, "trailing data after the JSON body")
	}
	return nil
}
