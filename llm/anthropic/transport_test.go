package anthropic

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

	"github.com/talaria-agent/talaria/llm"
)

func TestClassifyTransportContextWins(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithTimeout(context.Background(), -1)
	defer cancel2()
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want llm.TransportKind
	}{
		{"live ctx uses the error", context.Background(), urlErr(opErr("read", syscall.ECONNRESET)), llm.TransportReset},
		{"cancelled ctx", canceled, urlErr(opErr("read", syscall.ECONNRESET)), llm.TransportCanceled},
		{"expired ctx", expired, errors.New("net/http: request canceled"), llm.TransportTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classifyTransport(tt.ctx, tt.err); got != tt.want {
				t.Errorf("classifyTransport = %q, want %q", got, tt.want)
			}
		})
	}
}

// urlErr wraps err the way http.Client.Do reports it.
func urlErr(err error) error {
	return &url.Error{Op: "Post", URL: "https://api.anthropic.com/v1/messages", Err: err}
}

func opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, err)}
}
