// Package netclass names the connection-level failure behind an error,
// for the adapters' APIError.Transport.
package netclass

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/talaria-agent/talaria/llm"
)

// Classify names the connection-level failure behind err, or
// llm.TransportNone when err is not one. It checks types first, then message
// text for errors whose type is lost in wrapping (HTTP/2, proxies, custom
// transports). Order matters: a TLS or DNS failure is also a net.Error.
func Classify(err error) llm.TransportKind {
	if err == nil {
		return llm.TransportNone
	}
	switch {
	case errors.Is(err, context.Canceled):
		return llm.TransportCanceled
	case isCertError(err):
		return llm.TransportTLSCert
	case isDNSError(err):
		// Before timeouts: a DNS lookup that timed out is still "could not connect".
		return llm.TransportConnect
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), isTimeout(err):
		return llm.TransportTimeout
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return llm.TransportConnect
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED):
		return llm.TransportReset
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return llm.TransportEOF
	case isTLSError(err):
		return llm.TransportTLS
	case isDialError(err):
		return llm.TransportConnect
	}
	return kindFromText(strings.ToLower(err.Error()))
}

// textKinds is checked in order; certificate words come before generic TLS.
var textKinds = []struct {
	kind  llm.TransportKind
	words []string
}{
	{llm.TransportTLSCert, []string{"x509:", "certificate"}},
	{llm.TransportTLS, []string{"tls:", "tls handshake"}},
	{llm.TransportTimeout, []string{"timeout", "timed out", "deadline exceeded"}},
	{llm.TransportConnect, []string{string(llm.ConnectRefused), string(llm.ConnectNoHost), string(llm.ConnectNetUnreachable), string(llm.ConnectNoRoute)}},
	{llm.TransportReset, []string{"connection reset", "broken pipe", "goaway", "stream error", "forcibly closed", "connection aborted"}},
	{llm.TransportEOF, []string{"unexpected eof"}},
}

func kindFromText(msg string) llm.TransportKind {
	for _, tk := range textKinds {
		for _, w := range tk.words {
			if strings.Contains(msg, w) {
				return tk.kind
			}
		}
	}
	if strings.HasSuffix(msg, ": eof") || msg == "eof" {
		return llm.TransportEOF
	}
	return llm.TransportNone
}

func isCertError(err error) bool {
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.HostnameError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.CertificateInvalidError](err); ok {
		return true
	}
	_, ok := errors.AsType[x509.SystemRootsError](err)
	return ok
}

func isTLSError(err error) bool {
	if _, ok := errors.AsType[tls.AlertError](err); ok {
		return true
	}
	if _, ok := errors.AsType[tls.RecordHeaderError](err); ok {
		return true
	}
	_, ok := errors.AsType[*tls.ECHRejectionError](err)
	return ok
}

func isTimeout(err error) bool {
	ne, ok := errors.AsType[net.Error](err)
	return ok && ne.Timeout()
}

func isDNSError(err error) bool {
	_, ok := errors.AsType[*net.DNSError](err)
	return ok
}

func isDialError(err error) bool {
	oe, ok := errors.AsType[*net.OpError](err)
	return ok && oe.Op == "dial"
}
