package llm

import (
	"errors"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
)

func urlErr(err error) error {
	return &url.Error{Op: "Post", URL: "http://127.0.0.1:1/v1/chat/completions", Err: err}
}

func opErr(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, errno)}
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
