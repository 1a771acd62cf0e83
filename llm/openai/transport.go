package openai

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

// transportKind names the connection-level failure behind err, or
// TransportNone when err is not one. The order matters: a TLS or DNS failure
// is also a net.Error, and a canceled request may surface as an EOF.
func transportKind(err error) llm.TransportKind {
	if err == nil {
		return llm.TransportNone
	}
	var (
		netErr  net.Error
		dnsErr  *net.DNSError
		opErr   *net.OpError
		alert   tls.AlertError
		recHdr  tls.RecordHeaderError
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		roots   x509.SystemRootsError
	)
	switch {
	case errors.Is(err, context.Canceled):
		return llm.TransportCanceled
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return llm.TransportTimeout
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &host),
		errors.As(err, &invalid), errors.As(err, &roots):
		return llm.TransportTLSCert
	case errors.As(err, &alert), errors.As(err, &recHdr):
		return llm.TransportTLS
	case errors.As(err, &dnsErr), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return llm.TransportConnect
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ECONNABORTED):
		return llm.TransportReset
	case errors.As(err, &netErr) && netErr.Timeout():
		return llm.TransportTimeout
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return llm.TransportEOF
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return llm.TransportConnect
	}
	// Errors without a type to match: HTTP/2 stream resets and TLS failures
	// that crypto/tls reports as plain text.
	msg := err.Error()
	switch {
	case strings.Contains(msg, "stream error"), strings.Contains(msg, "GOAWAY"),
		strings.Contains(msg, "connection reset"), strings.Contains(msg, "broken pipe"):
		return llm.TransportReset
	case strings.Contains(msg, "tls: "):
		return llm.TransportTLS
	case strings.Contains(msg, "unexpected EOF"):
		return llm.TransportEOF
	}
	return llm.TransportNone
}
