package gateway

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// TestLimitListener: connections over the per-address cap are closed as
// soon as they are accepted; closing one frees its place.
func TestLimitListener(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := LimitListener(raw, 0, 3)
	defer ln.Close()
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	var clients []net.Conn
	for range 5 {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	for range 3 {
		<-accepted
	}
	closed := 0
	for _, c := range clients {
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Read(make([]byte, 1)); errors.Is(err, io.EOF) {
			closed++
		}
	}
	if closed != 2 {
		t.Fatalf("%d of 5 connections closed, want 2 (cap 3)", closed)
	}
}
