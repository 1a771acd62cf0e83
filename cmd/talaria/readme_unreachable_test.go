package main

import (
	"net"
	"os"
	"strings"
	"testing"
)

// The README shows the line a run prints when the server cannot be reached;
// it must be the line a real run prints (issue 25 minor: it showed an older
// wording).
func TestREADMEUnreachableLineIsReal(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const readmeBase = "http://127.0.0.1:8000/v1"
	var want string
	for _, l := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(l, "talaria: ") && strings.Contains(strings.ToLower(l), "could not connect to") {
			want = l
			break
		}
	}
	if want == "" || !strings.Contains(want, readmeBase) {
		t.Fatalf("README has no unreachable-server example at %s (found %q)", readmeBase, want)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/v1"
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	e := newCLIEnv(t)
	out := e.run("", "run", "--api", "openai", "--base-url", base, "--model", "m", "--workspace", e.ws, "hi")
	want = strings.ReplaceAll(want, readmeBase, base)
	var got string
	for _, l := range strings.Split(out.stderr, "\n") {
		if strings.Contains(strings.ToLower(l), "could not connect to") {
			got = l
		}
	}
	if got != want {
		t.Errorf("a real run prints\n%s\nthe README shows\n%s", got, want)
	}
}
