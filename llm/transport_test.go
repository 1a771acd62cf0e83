package llm

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
)

// timeoutErr is a net.Error that timed out, like http.Client.Timeout's.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func urlErr(err error) error {
	return &url.Error{Op: "Post", URL: "http://127.0.0.1:1/v1/chat/completions", Err: err}
}

func opErr(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, errno)}
}

func TestTransportKind(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want TransportKind
	}{
		{"nil", nil, TransportNone},
		{"plain error", errors.New("boom"), TransportNone},
		{"caller canceled", urlErr(context.Canceled), TransportCanceled},
		{"deadline", fmt.Errorf("read: %w", context.DeadlineExceeded), TransportTimeout},
		{"net timeout", urlErr(timeoutErr{}), TransportTimeout},
		{"os deadline", urlErr(os.ErrDeadlineExceeded), TransportTimeout},
		{"connection refused", urlErr(opErr("dial", syscall.ECONNREFUSED)), TransportConnect},
		{"DNS", urlErr(&net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "nope.invalid", IsNotFound: true}}), TransportConnect},
		{"DNS timeout is still connect", urlErr(&net.DNSError{Err: "timeout", Name: "x", IsTimeout: true}), TransportConnect},
		{"host unreachable", urlErr(opErr("dial", syscall.EHOSTUNREACH)), TransportConnect},
		{"reset", urlErr(opErr("read", syscall.ECONNRESET)), TransportReset},
		{"broken pipe", urlErr(opErr("write", syscall.EPIPE)), TransportReset},
		{"unexpected EOF", fmt.Errorf("reading body: %w", io.ErrUnexpectedEOF), TransportEOF},
		{"EOF before headers", urlErr(io.EOF), TransportEOF},
		{"cert unknown authority", urlErr(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), TransportTLSCert},
		{"cert hostname", urlErr(x509.HostnameError{Host: "x"}), TransportTLSCert},
		{"cert expired", urlErr(x509.CertificateInvalidError{Reason: x509.Expired}), TransportTLSCert},
		{"tls alert", urlErr(&net.OpError{Op: "remote error", Err: tls.AlertError(40)}), TransportTLS},
		{"tls record header", urlErr(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), TransportTLS},
		{"tls text only", errors.New("tls: handshake failure"), TransportTLS},
		{"http2 stream reset", errors.New("stream error: stream ID 3; INTERNAL_ERROR; received from peer"), TransportReset},
		{"http2 GOAWAY", errors.New("http2: server sent GOAWAY and closed the connection"), TransportReset},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ClassifyTransport(tt.err); got != tt.want {
				t.Errorf("ClassifyTransport(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestClassifyTransportWrapped(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want TransportKind
	}{
		{"nil", nil, TransportNone},
		{"refused", urlErr(opErr("dial", syscall.ECONNREFUSED)), TransportConnect},
		{"dns", urlErr(&net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "api.invalid", IsNotFound: true}}), TransportConnect},
		{"other dial failure", urlErr(&net.OpError{Op: "dial", Err: errors.New("socket: too many open files")}), TransportConnect},
		{"reset", urlErr(opErr("read", syscall.ECONNRESET)), TransportReset},
		{"broken pipe", urlErr(opErr("write", syscall.EPIPE)), TransportReset},
		{"unexpected EOF", fmt.Errorf("reading body: %w", io.ErrUnexpectedEOF), TransportEOF},
		{"EOF before headers", urlErr(io.EOF), TransportEOF},
		{"net timeout", urlErr(&net.OpError{Op: "read", Err: timeoutErr{}}), TransportTimeout},
		{"deadline", urlErr(context.DeadlineExceeded), TransportTimeout},
		{"os deadline", fmt.Errorf("read: %w", os.ErrDeadlineExceeded), TransportTimeout},
		{"canceled", urlErr(context.Canceled), TransportCanceled},
		{"unknown authority", urlErr(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), TransportTLSCert},
		{"hostname mismatch", urlErr(x509.HostnameError{Certificate: &x509.Certificate{}, Host: "x"}), TransportTLSCert},
		{"expired", urlErr(x509.CertificateInvalidError{Reason: x509.Expired}), TransportTLSCert},
		{"tls alert", urlErr(&net.OpError{Op: "remote error", Err: tls.AlertError(40)}), TransportTLS},
		{"tls record header", urlErr(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), TransportTLS},
		{"http2 stream reset text", errors.New("stream error: stream ID 3; INTERNAL_ERROR; received from peer"), TransportReset},
		{"http2 goaway text", errors.New("http2: server sent GOAWAY and closed the connection"), TransportReset},
		{"proxied cert text", errors.New("proxy: tls: failed to verify certificate: x509: certificate signed by unknown authority"), TransportTLSCert},
		{"unrelated", errors.New("something else"), TransportNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ClassifyTransport(tt.err); got != tt.want {
				t.Errorf("ClassifyTransport(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestConnectCauseOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want ConnectCause
	}{
		{"nil", nil, ConnectUnknown},
		{"refused", urlErr(opErr("dial", syscall.ECONNREFUSED)), ConnectRefused},
		{"dns", urlErr(&net.OpError{Op: "dial", Err: &net.DNSError{Err: "server misbehaving", Name: "api.invalid"}}), ConnectNoHost},
		{"network unreachable", urlErr(opErr("dial", syscall.ENETUNREACH)), ConnectNetUnreachable},
		{"host unreachable", urlErr(opErr("dial", syscall.EHOSTUNREACH)), ConnectNoRoute},
		{"refused, type lost in wrapping", errors.New("proxy: dial tcp 10.0.0.1:443: connect: Connection refused"), ConnectRefused},
		{"other dial failure", urlErr(&net.OpError{Op: "dial", Err: errors.New("socket: too many open files")}), ConnectUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ConnectCauseOf(tt.err); got != tt.want {
				t.Errorf("ConnectCauseOf(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}
