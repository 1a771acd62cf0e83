package mcp_test

import (
	"context"
	"testing"
)

// BenchmarkStdioCall is one MCP tool call round trip to a stdio server
// (the go-sdk test server): what an MCP tool adds to a tool round.
func BenchmarkStdioCall(b *testing.B) {
	f := newManager(b, nil, stdio("t", ""))
	echo := find(b, f.session(b).Tools(), "t__echo")
	ctx := context.Background()
	args := []byte(`{"text":"hi"}`)
	b.ResetTimer()
	for b.Loop() {
		if r, _ := echo.Run(ctx, args); r.IsError {
			b.Fatal(r.Content)
		}
	}
}

// BenchmarkStartSession is starting a per-session stdio server: spawn,
// handshake, tools/list, schema checks, and shutting it down again.
func BenchmarkStartSession(b *testing.B) {
	cfg := stdio("p", "")
	cfg.PerSession = true
	f := newManager(b, nil, cfg)
	ctx := context.Background()
	for b.Loop() {
		s, err := f.m.Session(ctx)
		if err != nil || len(s.Tools()) == 0 {
			b.Fatal(err)
		}
		s.Close()
	}
}
