package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// chatPrompt reads the next message of a chat (local or --server) while no
// turn runs: one Ctrl+C says how to quit, a second within 3 s quits, and
// any other signal (SIGTERM, SIGHUP) or the end of input quits at once.
type chatPrompt struct {
	out     io.Writer
	lines   <-chan string
	sig     <-chan os.Signal
	lastSig time.Time
}

// next prints the prompt and returns the next non-empty line, trimmed;
// false means quit.
func (p *chatPrompt) next() (string, bool) {
	for {
		fmt.Fprint(p.out, "\n> ")
		select {
		case l, ok := <-p.lines:
			if !ok {
				fmt.Fprintln(p.out)
				return "", false
			}
			if line := strings.TrimSpace(l); line != "" {
				return line, true
			}
		case s := <-p.sig:
			if s != os.Interrupt || time.Since(p.lastSig) < 3*time.Second {
				fmt.Fprintln(p.out)
				return "", false
			}
			p.lastSig = time.Now()
			fmt.Fprint(p.out, "\n(Ctrl+C again to quit, or /exit)")
		}
	}
}
