package main

import (
	"context"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/talaria-agent/talaria/llm"
)

// callWatch tells the progress display when a model call starts waiting
// for its first event. The providers are built once per process and the
// display once per turn, so the display registers itself here.
type callWatch struct {
	mu      sync.Mutex
	onStart func(model string) (stop func())
}

func (w *callWatch) set(f func(model string) func()) {
	w.mu.Lock()
	w.onStart = f
	w.mu.Unlock()
}

func (w *callWatch) start(model string) func() {
	w.mu.Lock()
	f := w.onStart
	w.mu.Unlock()
	if f == nil {
		return func() {}
	}
	return f(model)
}

// watchedProvider reports each call's wait for its first event to a
// callWatch; everything else is the wrapped provider's.
type watchedProvider struct {
	llm.Provider
	watch *callWatch
}

func (p watchedProvider) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	inner := p.Provider.Stream(ctx, req)
	return func(yield func(llm.Event, error) bool) {
		model := ""
		if req != nil {
			model = req.Model
		}
		var once sync.Once
		stop := p.watch.start(model)
		end := func() { once.Do(stop) }
		defer end()
		for ev, err := range inner {
			end() // the first event (or error) ends the wait
			if !yield(ev, err) {
				return
			}
		}
	}
}

// Timing of the "waiting for MODEL… Ns" line: nothing for a quick answer;
// on a terminal the line counts up in place every second, elsewhere (a
// log, a pipe) it is printed once and then every waitEvery.
const (
	waitDelay = 2 * time.Second
	waitTick  = time.Second
	waitEvery = 15 * time.Second
)

// waitFor shows that a call is waiting for model until stop is called.
func (p *progress) waitFor(model string) (stop func()) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.waitLoop(model, quit)
	}()
	return func() {
		close(quit)
		<-done
	}
}

func (p *progress) waitLoop(model string, quit <-chan struct{}) {
	start := time.Now()
	t := time.NewTicker(p.waitTick)
	defer t.Stop()
	var last time.Duration = -1
	for {
		select {
		case <-quit:
			p.mu.Lock()
			p.clearWait()
			p.mu.Unlock()
			return
		case <-t.C:
		}
		el := time.Since(start)
		if el < p.waitDelay {
			continue
		}
		line := fmt.Sprintf("· waiting for %s… %ds", termSafe(model), int(el.Seconds()))
		p.mu.Lock()
		switch {
		case p.tty:
			p.endLine()
			fmt.Fprint(p.raw, "\r\x1b[K"+line)
			p.waitShown = true
		case last < 0 || el-last >= p.waitEvery:
			p.endLine()
			fmt.Fprintln(p.w, line)
			last = el
		}
		p.mu.Unlock()
	}
}

// clearWait erases the in-place waiting line, and ends a reasoning block:
// every other event starts a line of its own. p.mu is held.
func (p *progress) clearWait() {
	p.endReasoning()
	if p.waitShown {
		fmt.Fprint(p.raw, "\r\x1b[K")
		p.waitShown = false
	}
}
