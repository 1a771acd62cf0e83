package egress

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// proxyVars are set for the confined command; NO_PROXY is removed so
// nothing bypasses the proxy (there is no other route anyway).
var proxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}

// RelayMain is the relay inside the sandbox, run as
// `talaria RELAY-COMMAND SOCKET PORT -- PROGRAM ARGS...`: it listens on
// 127.0.0.1:PORT in the sandbox's own loopback, forwards each connection
// to the proxy's Unix socket, runs the program with the proxy variables
// set, and exits as the program does.
func RelayMain(args []string) int {
	if len(args) < 4 || args[2] != "--" {
		fmt.Fprintln(os.Stderr, "talaria sandbox relay: usage: SOCKET PORT -- PROGRAM ARGS...")
		return 125
	}
	socket, port, argv := args[0], args[1], args[3:]
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		fmt.Fprintf(os.Stderr, "talaria sandbox relay: %v\n", err)
		return 125
	}
	go relay(ln, socket)
	proxy := "http://" + ln.Addr().String()
	cmd := exec.Command(argv[0], argv[1:]...)
	if !strings.Contains(argv[0], "/") {
		if path, err := exec.LookPath(argv[0]); err == nil {
			cmd.Path, cmd.Err = path, nil
		}
	}
	cmd.Env = proxyEnv(os.Environ(), proxy)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "talaria sandbox relay: %v\n", err)
		return 127
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	signal.Stop(sigs)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return 125
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		// Die the same way, so the caller sees the signal, not a code.
		signal.Reset(ws.Signal())
		_ = syscall.Kill(os.Getpid(), ws.Signal())
		time.Sleep(100 * time.Millisecond)
		return 128 + int(ws.Signal())
	}
	return cmd.ProcessState.ExitCode()
}

// proxyEnv is environ with the proxy variables pointing at proxy and no
// NO_PROXY.
func proxyEnv(environ []string, proxy string) []string {
	drop := map[string]bool{"NO_PROXY": true, "no_proxy": true}
	for _, v := range proxyVars {
		drop[v] = true
	}
	out := make([]string, 0, len(environ)+len(proxyVars))
	for _, kv := range environ {
		if name, _, _ := strings.Cut(kv, "="); !drop[name] {
			out = append(out, kv)
		}
	}
	for _, v := range proxyVars {
		out = append(out, v+"="+proxy)
	}
	return out
}

// relay forwards each connection on ln to the Unix socket.
func relay(ln net.Listener, socket string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			up, err := net.Dial("unix", socket)
			if err != nil {
				fmt.Fprintf(os.Stderr, "talaria sandbox relay: %v\n", err)
				return
			}
			defer up.Close()
			splice(c, up)
		}()
	}
}
