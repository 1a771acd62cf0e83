package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/llm"
)

var explainHelp = cmdHelp{
	name:  "explain-error",
	usage: "[--provider P] [flags] [--body S | --body-file F | < body]",
	about: `Classifies a provider error the way a running turn would, and says what
happened, whether retrying can help, and what Talaria would do about it.
Paste the HTTP status and body you got; --message is the error text a client
library, proxy or another tool showed (it may be all you have: no status is
needed); --transport names a connection-level failure (timeout, connect,
reset, eof, tls, tls-cert). Without --provider the error is classified from
status, headers, body and text alone, and the output says which
provider-specific rules could not be applied.`,
	examples: []string{
		`talaria explain-error --provider openai --status 429 --header "Retry-After: 20"`,
		`talaria explain-error --provider anthropic --status 400 --body-file error.json --json`,
		`talaria explain-error --message "upstream connect error or disconnect/reset before headers"`,
	},
}

type headerFlags []string

func (h *headerFlags) String() string     { return strings.Join(*h, ", ") }
func (h *headerFlags) Set(v string) error { *h = append(*h, v); return nil }

func (c *cli) explainCmd(_ context.Context, args []string) int {
	fs := explainHelp.flags()
	var in failover.Input
	var headers headerFlags
	var body, bodyFile, transport string
	fs.StringVar(&in.Provider, "provider", "", "provider that failed: openai, anthropic, openrouter, azure, gemini, vllm, llama.cpp, ollama, ... (optional)")
	fs.StringVar(&in.Model, "model", "", "model that was called")
	fs.StringVar(&in.API, "api", "", "wire format: openai, openai-responses, anthropic or gemini (guessed from --provider when empty)")
	fs.StringVar(&in.BaseURL, "base-url", "", "base URL that was called (helps recognise aggregators and local servers)")
	fs.IntVar(&in.Status, "status", 0, "HTTP status code")
	fs.Var(&headers, "header", `response header "Name: value" (repeatable), e.g. "Retry-After: 20"`)
	fs.StringVar(&body, "body", "", "response body")
	fs.StringVar(&bodyFile, "body-file", "", "file holding the response body")
	fs.StringVar(&in.Message, "message", "", "error text shown by a client library, when there is no body")
	fs.StringVar(&transport, "transport", "", "connection-level failure: timeout, connect, reset, eof, tls, tls-cert")
	fs.BoolVar(&in.MidStream, "mid-stream", false, "the failure came after the answer had started streaming")
	fs.IntVar(&in.ContextTokens, "context-tokens", 0, "size of the conversation sent, in tokens (overflow heuristics)")
	fs.IntVar(&in.ContextWindow, "context-window", 0, "the model's context window, in tokens")
	fs.IntVar(&in.Messages, "messages", 0, "number of messages in the conversation sent")
	jsonOut := fs.Bool("json", false, "print the classification as JSON")
	if code, done := c.parseFlags(fs, explainHelp, args); done {
		return code
	}
	switch {
	case body != "" && bodyFile != "":
		return c.fail(exitUsage, "use --body or --body-file, not both")
	case body != "":
		in.Body = []byte(body)
	case bodyFile != "":
		b, err := os.ReadFile(bodyFile)
		if err != nil {
			return c.fail(exitUsage, "--body-file: %v", err)
		}
		in.Body = b
	case in.Message == "" && transport == "" && !isTerminal(c.stdin):
		b, err := io.ReadAll(io.LimitReader(c.stdin, 1<<20))
		if err != nil {
			return c.fail(exitUsage, "reading the body from stdin: %v", err)
		}
		in.Body = b
	}
	in.Header = http.Header{}
	for _, h := range headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok {
			return c.fail(exitUsage, `--header %q: use "Name: value"`, h)
		}
		in.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	if transport != "" {
		switch llm.TransportKind(transport) {
		case llm.TransportTimeout, llm.TransportConnect, llm.TransportReset, llm.TransportEOF, llm.TransportTLS, llm.TransportTLSCert, llm.TransportCanceled:
			in.Transport = llm.TransportKind(transport)
		default:
			return c.fail(exitUsage, "--transport %q: use timeout, connect, reset, eof, tls or tls-cert", transport)
		}
	}
	if in.Status == 0 && len(in.Body) == 0 && in.Message == "" && in.Transport == "" {
		return c.fail(exitUsage, "nothing to explain: give --status and --body, --message, or --transport")
	}
	// A pasted client message that names why no connection was made
	// (getaddrinfo ENOTFOUND, ECONNREFUSED) is that connect failure, said
	// as a real run says it ("no such host"), not a generic timeout.
	if in.Transport == "" && in.Status == 0 && len(in.Body) == 0 && in.Message != "" {
		if cause := llm.ConnectCauseOf(errors.New(in.Message)); cause != llm.ConnectUnknown {
			in.Transport, in.Connect = llm.TransportConnect, cause
		}
	}
	if in.API == "" && in.Provider != "" {
		in.API = guessAPI(in.Provider)
	}
	cl := failover.Classify(in)
	skipped := skippedRules(failover.ProviderRulesSkipped(in))
	if *jsonOut {
		return c.printJSON(struct {
			failover.Classified
			ProviderRulesSkipped []string `json:"provider_rules_skipped,omitempty"`
		}{cl, skipped})
	}
	fmt.Fprintln(c.stdout, strings.TrimRight(failover.Explain(cl), "\n"))
	if len(skipped) > 0 {
		fmt.Fprintln(c.stdout, "Not applied (no --provider): "+strings.Join(skipped, "; ")+".")
	}
	return exitOK
}

// skippedRules words the provider rules explain-error could not apply,
// with the flag that would apply each.
func skippedRules(rules []failover.Rule) []string {
	var out []string
	for _, r := range rules {
		switch r {
		case failover.RuleAnthropicErrorTypes:
			out = append(out, "Anthropic's error types in a body without Anthropic's {\"type\":\"error\"} envelope (--provider anthropic or --api anthropic)")
		case failover.RuleOpenRouterUpstream:
			out = append(out, "OpenRouter's relayed upstream rate limits on a 429 (--provider openrouter or --base-url)")
		case failover.RuleProviderName:
			out = append(out, "the provider's name in the advice and in key cooldowns")
		default:
			out = append(out, string(r))
		}
	}
	return out
}

func guessAPI(provider string) string {
	if strings.Contains(strings.ToLower(provider), "anthropic") || strings.Contains(strings.ToLower(provider), "claude") {
		return "anthropic"
	}
	return "openai"
}
