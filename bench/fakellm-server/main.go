// Command fakellm-server serves Talaria's scripted model server as a
// process of its own, for benchmarks and for trying `talaria run` by hand:
//
//	fakellm-server [-addr 127.0.0.1:8099] [-script task|noop|FILE] [-latency 0]
//
// prints the URL and serves until interrupted (-write-task DIR writes the
// task's workspace files, to try it by hand). Point talaria at it with
// --api openai --base-url URL/v1, or --api anthropic --base-url URL.
//
// With a command after "--" it measures instead: it runs the command -runs
// times (after -warmup unmeasured runs) and reports, per run, the time from
// starting the process to the server receiving its first request (cold
// start), the wall time, the CPU time (user+system, the process's reaped
// children — tool processes — included) and the peak RSS. In the command,
// {url}, {openai_url} and {anthropic_url} are replaced by the server's
// URLs, and {workspace} by a fresh directory holding the task's files.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/talaria-agent/talaria/bench/benchscript"
	"github.com/talaria-agent/talaria/internal/fakellm"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fakellm-server:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	script := flag.String("script", "task", `replies: "task" (ten rounds with the built-in tools), "noop" (ten rounds of the benchmark's noop tool), or a JSON script file (fakellm.LoadScript)`)
	latency := flag.Duration("latency", 0, "wait before each reply's first byte")
	runs := flag.Int("runs", 5, "measured runs of the command")
	warmup := flag.Int("warmup", 1, "unmeasured runs first (the first creates the database)")
	jsonOut := flag.Bool("json", false, "print one JSON object per measured run instead of a table")
	writeTask := flag.String("write-task", "", "write the task's workspace files into this directory and exit")
	flag.Parse()
	if *writeTask != "" {
		return benchscript.WriteTaskWorkspace(*writeTask)
	}

	srv := fakellm.New(fakellm.WithLatency(*latency))
	defer srv.Close()
	steps, err := loadSteps(srv, *script)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	first := &firstRequest{}
	hs := &http.Server{Handler: first.wrap(srv), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	url := "http://" + ln.Addr().String()

	if flag.NArg() == 0 {
		fmt.Println(url)
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		<-ctx.Done()
		return nil
	}
	m := &measurer{
		srv: srv, first: first, url: url, steps: steps, args: flag.Args(),
		taskFiles: *script == "task",
	}
	return m.measure(*warmup, *runs, *jsonOut)
}

// loadSteps sets up the server's replies. A file script is a queue, so it
// is returned for re-queueing before every run; the built-ins are
// stateless defaults.
func loadSteps(srv *fakellm.Server, script string) ([]fakellm.Step, error) {
	switch script {
	case "task":
		srv.SetDefault(benchscript.Task)
		return nil, nil
	case "noop":
		srv.SetDefault(benchscript.Noop)
		return nil, nil
	}
	f, err := os.Open(script)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	steps, err := fakellm.LoadScript(f)
	if err != nil {
		return nil, err
	}
	if len(steps) == 0 {
		return nil, errors.New(script + ": the script has no steps")
	}
	srv.Script(steps...)
	return steps, nil
}

// firstRequest records when the first request since the last reset
// arrived, before the scripted server reads its body.
type firstRequest struct {
	mu sync.Mutex
	at time.Time
}

func (f *firstRequest) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		f.mu.Lock()
		if f.at.IsZero() {
			f.at = now
		}
		f.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (f *firstRequest) reset() {
	f.mu.Lock()
	f.at = time.Time{}
	f.mu.Unlock()
}

func (f *firstRequest) get() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.at
}
