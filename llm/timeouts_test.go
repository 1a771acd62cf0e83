package llm_test

import (
	"context"
	"errors"
	"iter"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/anthropic"
	"github.com/talaria-agent/talaria/llm/openai"
)

// silentServer accepts connections, reads nothing and answers nothing, as a
// wedged model server does. It returns the base URL.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

type adapter struct {
	name string
	make func(base string, to llm.Timeouts) llm.Provider
	base func(s *fakellm.Server) string
}

var adapters = []adapter{
	{"openai", func(base string, to llm.Timeouts) llm.Provider {
		return openai.NewChat(openai.Config{BaseURL: base + "/v1", APIKey: "k", Timeouts: to})
	}, (*fakellm.Server).URL},
	{"anthropic", func(base string, to llm.Timeouts) llm.Provider {
		return anthropic.New(anthropic.Config{BaseURL: base, APIKey: "k", Timeouts: to})
	}, (*fakellm.Server).URL},
}

// drain runs a stream to its end and returns its error.
func drain(seq iter.Seq2[llm.Event, error]) error {
	for _, err := range seq {
		if err != nil {
			return err
		}
	}
	return nil
}

func request() *llm.Request {
	return &llm.Request{Model: "gpt-4.1", Messages: []llm.Message{llm.NewText(llm.RoleUser, "hi")}}
}

// A server that accepts and never answers, and a stream that stalls after
// its headers, each end in an error classified as a timeout within the
// configured limit instead of hanging; the caller's ctx has no deadline.
func TestSilentServerTimesOut(t *testing.T) {
	for _, a := range adapters {
		t.Run(a.name+"/no response headers", func(t *testing.T) {
			base := silentServer(t)
			p := a.make(base, llm.Timeouts{Header: 300 * time.Millisecond})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := drain(p.Stream(ctx, request()))
			checkTimeout(t, ctx, err)
		})
		t.Run(a.name+"/stream stalls after headers", func(t *testing.T) {
			srv := fakellm.New()
			t.Cleanup(srv.Close)
			// The first event arrives, then nothing for a minute.
			srv.Script(fakellm.Text("a long answer that never ends").WithChunkDelay(time.Minute))
			p := a.make(a.base(srv), llm.Timeouts{Idle: 300 * time.Millisecond})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := drain(p.Stream(ctx, request()))
			checkTimeout(t, ctx, err)
			var ae *llm.APIError
			if errors.As(err, &ae) && !ae.MidStream {
				t.Errorf("a stall after the first event is mid-stream: %+v", ae)
			}
		})
		t.Run(a.name+"/a slow but live stream is not cut", func(t *testing.T) {
			srv := fakellm.New()
			t.Cleanup(srv.Close)
			srv.Script(fakellm.Text("one two three four five six").WithChunkDelay(100 * time.Millisecond))
			p := a.make(a.base(srv), llm.Timeouts{Idle: 2 * time.Second})
			if err := drain(p.Stream(context.Background(), request())); err != nil {
				t.Fatalf("live stream failed: %v", err)
			}
		})
	}
}

func checkTimeout(t *testing.T, ctx context.Context, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("the stream ended without an error")
	}
	if ctx.Err() != nil {
		t.Fatalf("the call hung until the test's own deadline: %v", err)
	}
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.Transport != llm.TransportTimeout {
		t.Fatalf("error is not a transport timeout: %#v", err)
	}
	if c := failover.ClassifyError(err); c.Class != failover.ClassTimeout || !c.Retryable {
		t.Errorf("classified %s (retryable %v), want timeout", c.Class, c.Retryable)
	}
}
