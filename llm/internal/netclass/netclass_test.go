package netclass

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

	"github.com/talaria-agent/talaria/llm"
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
		want llm.TransportKind
	}{
		{"nil", nil, llm.TransportNone},
		{"plain error", errors.New("boom"), llm.TransportNone},
		{"caller canceled", urlErr(context.Canceled), llm.TransportCanceled},
		{"deadline", fmt.Errorf("read: %w", context.DeadlineExceeded), llm.TransportTimeout},
		{"net timeout", urlErr(timeoutErr{}), llm.TransportTimeout},
		{"os deadline", urlErr(os.ErrDeadlineExceeded), llm.TransportTimeout},
		{"connection refused", urlErr(opErr("dial", syscall.ECONNREFUSED)), llm.TransportConnect},
		{"DNS", urlErr(&net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "nope.invalid", IsNotFound: true}}), llm.TransportConnect},
		{"DNS timeout is still connect", urlErr(&net.DNSError{Err: "timeout", Name: "x", IsTimeout: true}), llm.TransportConnect},
		{"host unreachable", urlErr(opErr("dial", syscall.EHOSTUNREACH)), llm.TransportConnect},
		{"reset", urlErr(opErr("read", syscall.ECONNRESET)), llm.TransportReset},
		{"broken pipe", urlErr(opErr("write", syscall.EPIPE)), llm.TransportReset},
		{"unexpected EOF", fmt.Errorf("reading body: %w", io.ErrUnexpectedEOF), llm.TransportEOF},
		{"EOF before headers", urlErr(io.EOF), llm.TransportEOF},
		{"cert unknown authority", urlErr(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), llm.TransportTLSCert},
		{"cert hostname", urlErr(x509.HostnameError{Host: "x"}), llm.TransportTLSCert},
		{"cert expired", urlErr(x509.CertificateInvalidError{Reason: x509.Expired}), llm.TransportTLSCert},
		{"tls alert", urlErr(&net.OpError{Op: "remote error", Err: tls.AlertError(40)}), llm.TransportTLS},
		{"tls record header", urlErr(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), llm.TransportTLS},
		{"tls text only", errors.New("tls: handshake failure"), llm.TransportTLS},
		{"http2 stream reset", errors.New("stream error: stream ID 3; INTERNAL_ERROR; received from peer"), llm.TransportReset},
		{"http2 GOAWAY", errors.New("http2: server sent GOAWAY and closed the connection"), llm.TransportReset},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.err); got != tt.want {
				t.Errorf("Classify(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestClassifyTransportWrapped(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want llm.TransportKind
	}{
		{"nil", nil, llm.TransportNone},
		{"refused", urlErr(opErr("dial", syscall.ECONNREFUSED)), llm.TransportConnect},
		{"dns", urlErr(&net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "api.invalid", IsNotFound: true}}), llm.TransportConnect},
		{"other dial failure", urlErr(&net.OpError{Op: "dial", Err: errors.New("socket: too many open files")}), llm.TransportConnect},
		{"reset", urlErr(opErr("read", syscall.ECONNRESET)), llm.TransportReset},
		{"broken pipe", urlErr(opErr("write", syscall.EPIPE)), llm.TransportReset},
		{"unexpected EOF", fmt.Errorf("reading body: %w", io.ErrUnexpectedEOF), llm.TransportEOF},
		{"EOF before headers", urlErr(io.EOF), llm.TransportEOF},
		{"net timeout", urlErr(&net.OpError{Op: "read", Err: timeoutErr{}}), llm.TransportTimeout},
		{"deadline", urlErr(context.DeadlineExceeded), llm.TransportTimeout},
		{"os deadline", fmt.Errorf("read: %w", os.ErrDeadlineExceeded), llm.TransportTimeout},
		{"canceled", urlErr(context.Canceled), llm.TransportCanceled},
		{"unknown authority", urlErr(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), llm.TransportTLSCert},
		{"hostname mismatch", urlErr(x509.HostnameError{Certificate: &x509.Certificate{}, Host: "x"}), llm.TransportTLSCert},
		{"expired", urlErr(x509.CertificateInvalidError{Reason: x509.Expired}), llm.TransportTLSCert},
		{"tls alert", urlErr(&net.OpError{Op: "remote error", Err: tls.AlertError(40)}), llm.TransportTLS},
		{"tls record header", urlErr(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), llm.TransportTLS},
		{"http2 stream reset text", errors.New("stream error: stream ID 3; INTERNAL_ERROR; received from peer"), llm.TransportReset},
		{"http2 goaway text", errors.New("http2: server sent GOAWAY and closed the connection"), llm.TransportReset},
		{"proxied cert text", errors.New("proxy: tls: failed to verify certificate: x509: certificate signed by unknown authority"), llm.TransportTLSCert},
		{"unrelated", errors.New("something else"), llm.TransportNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.err); got != tt.want {
				t.Errorf("Classify(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}
