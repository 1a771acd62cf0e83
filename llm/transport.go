package llm

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
)

// ClassifyTransport names the connection-level failure behind err, or
// TransportNone when err is not one. It checks types first, then message
// text for errors whose type is lost in wrapping (HTTP/2, proxies, custom
// transports). Order matters: a TLS or DNS failure is also a net.Error.
func ClassifyTransport(err error) TransportKind {
	if err == nil {
		return TransportNone
	}
	switch {
	case errors.Is(err, context.Canceled):
		return TransportCanceled
	case isCertError(err):
		return TransportTLSCert
	case isDNSError(err):
		// Before timeouts: a DNS lookup that timed out is still "could not connect".
		return TransportConnect
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), isTimeout(err):
		return TransportTimeout
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return TransportConnect
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED):
		return TransportReset
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return TransportEOF
	case isTLSError(err):
		return TransportTLS
	case isDialError(err):
		return TransportConnect
	}
	return kindFromText(strings.ToLower(err.Error()))
}

// textKinds is checked in order; certificate words come before generic TLS.
var textKinds = []struct {
	kind  TransportKind
	words []string
}{
	{TransportTLSCert, []string{"x509:", "certificate"}},
	{TransportTLS, []string{"tls:", "tls handshake"}},
	{TransportTimeout, []string{"timeout", "timed out", "deadline exceeded"}},
	{TransportConnect, []string{string(ConnectRefused), string(ConnectNoHost), string(ConnectNetUnreachable), string(ConnectNoRoute)}},
	{TransportReset, []string{"connection reset", "broken pipe", "goaway", "stream error", "forcibly closed", "connection aborted"}},
	{TransportEOF, []string{"unexpected eof"}},
}

func kindFromText(msg string) TransportKind {
	for _, tk := range textKinds {
		for _, w := range tk.words {
			if strings.Contains(msg, w) {
				return tk.kind
			}
		}
	}
	if strings.HasSuffix(msg, ": eof") || msg == "eof" {
		return TransportEOF
	}
	return TransportNone
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

// ConnectCause says why no connection could be made (TransportConnect). Its
// value is the system's own short phrase, which people recognise.
type ConnectCause string

const (
	ConnectUnknown        ConnectCause = ""
	ConnectRefused        ConnectCause = "connection refused"     // nothing listens on the port
	ConnectNoHost         ConnectCause = "no such host"           // the name does not resolve
	ConnectNetUnreachable ConnectCause = "network is unreachable" // no route to that network
	ConnectNoRoute        ConnectCause = "no route to host"       // the host is down or filtered
)

// ConnectCauseOf names why err could not connect: from the error's type
// first, then, for errors whose type is lost in wrapping, from its text.
// ConnectUnknown when err says neither.
func ConnectCauseOf(err error) ConnectCause {
	switch {
	case err == nil:
		return ConnectUnknown
	case errors.Is(err, syscall.ECONNREFUSED):
		return ConnectRefused
	case isDNSError(err):
		return ConnectNoHost
	case errors.Is(err, syscall.ENETUNREACH):
		return ConnectNetUnreachable
	case errors.Is(err, syscall.EHOSTUNREACH):
		return ConnectNoRoute
	}
	low := strings.ToLower(err.Error())
	for _, c := range []ConnectCause{ConnectRefused, ConnectNoHost, ConnectNetUnreachable, ConnectNoRoute} {
		if strings.Contains(low, string(c)) {
			return c
		}
	}
	// Node, Python and curl spell the same causes their own way; a pasted
	// client message says one of these.
	for _, w := range connectCauseWords {
		if strings.Contains(low, w.word) {
			return w.cause
		}
	}
	return ConnectUnknown
}

var connectCauseWords = [...]struct {
	word  string
	cause ConnectCause
}{
	{"econnrefused", ConnectRefused},
	{"enotfound", ConnectNoHost},
	{"eai_again", ConnectNoHost},
	{"eai_noname", ConnectNoHost},
	{"name or service not known", ConnectNoHost},
	{"nodename nor servname", ConnectNoHost},
	{"temporary failure in name resolution", ConnectNoHost},
	{"could not resolve host", ConnectNoHost},
	{"enetunreach", ConnectNetUnreachable},
	{"ehostunreach", ConnectNoRoute},
}
