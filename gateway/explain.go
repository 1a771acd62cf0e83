package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/llm"
)

// explain classifies a provider error as `talaria explain-error --json`
// does, plus the explanation text.
func explain(req explainRequest) (map[string]any, error) {
	in := failover.Input{
		Provider: req.Provider, Model: req.Model, API: req.API, BaseURL: req.BaseURL, Status: req.Status,
		Body: []byte(req.Body), Message: req.Message, MidStream: req.MidStream,
		ContextTokens: req.ContextTokens, ContextWindow: req.ContextWindow, Messages: req.MessageCount,
		Header: http.Header{},
	}
	for k, v := range req.Headers {
		in.Header.Set(k, v)
	}
	if req.Transport != "" {
		switch k := llm.TransportKind(req.Transport); k {
		case llm.TransportTimeout, llm.TransportConnect, llm.TransportReset, llm.TransportEOF, llm.TransportTLS, llm.TransportTLSCert:
			in.Transport = k
		default:
			return nil, errors.New(`"transport" must be timeout, connect, reset, eof, tls or tls-cert`)
		}
	}
	if in.Status == 0 && len(in.Body) == 0 && in.Message == "" && in.Transport == "" {
		return nil, errors.New(`nothing to explain: give "status" and "body", "message", or "transport"`)
	}
	if in.API == "" {
		in.API = "openai"
		if p := strings.ToLower(in.Provider); strings.Contains(p, "anthropic") || strings.Contains(p, "claude") {
			in.API = "anthropic"
		}
	}
	cl := failover.Classify(in)
	b, err := jsonRoundTrip(cl)
	if err != nil {
		return nil, err
	}
	b["explanation"] = failover.Explain(cl)
	return b, nil
}

func jsonRoundTrip(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	err = json.Unmarshal(b, &m)
	return m, err
}
