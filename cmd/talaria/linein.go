package main

import (
	"strings"
)

// Line mode on a terminal (chat --plain, TERM=dumb, NO_COLOR) reads cooked
// lines, so a pasted block arrives as several lines and arrow keys as
// escape sequences. With bracketed paste switched on, the terminal marks a
// paste; the lines between the marks are one message, and whatever escape
// sequence is left (an arrow key) is removed rather than sent to a model.

const (
	pasteStart = "\x1b[200~"
	pasteEnd   = "\x1b[201~"
	// bracketedPasteOn/Off switch the terminal's marking of pastes.
	bracketedPasteOn  = "\x1b[?2004h"
	bracketedPasteOff = "\x1b[?2004l"
)

// joinPastes turns the raw lines of in into messages: the lines of one
// paste (and a line ended by a backslash with the next) become one message
// with its newlines kept; other escape sequences are removed.
func joinPastes(in <-chan string) <-chan string {
	out := make(chan string)
	go func() {
		defer close(out)
		var msg []string
		pasting, cont := false, false
		for l := range in {
			if strings.Contains(l, pasteStart) {
				pasting = true
				l = strings.ReplaceAll(l, pasteStart, "")
			}
			if strings.Contains(l, pasteEnd) {
				pasting = false
				l = strings.ReplaceAll(l, pasteEnd, "")
			}
			l = strings.TrimRight(termSafe(l), "\r")
			cont = !pasting && strings.HasSuffix(l, "\\")
			if cont {
				l = strings.TrimSuffix(l, "\\")
			}
			msg = append(msg, l)
			if pasting || cont {
				continue
			}
			out <- strings.Join(msg, "\n")
			msg = nil
		}
		if len(msg) > 0 {
			out <- strings.Join(msg, "\n")
		}
	}()
	return out
}
