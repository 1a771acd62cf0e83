package main

import (
	"fmt"

	"github.com/talaria-agent/talaria/catalogue"
	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/llm"
)

// promptFits checks, before any call, that the user's own message could fit
// the window of at least one route: compression can shrink the history but
// never the message itself, so a message larger than every window would
// only be compressed in vain and sent again and again. It returns the
// sentence to say when it cannot fit.
func promptFits(a *app, text string) (string, bool) {
	need := compact.EstimateMessage(llm.NewText(llm.RoleUser, text))
	cat := a.agent.Catalogue()
	if cat == nil {
		cat = catalogue.New(nil)
	}
	best, bestModel := 0, ""
	for _, r := range a.routes {
		info := cat.Lookup(r.Model)
		// Room for the answer is part of the window too.
		room := info.Window - info.MaxOutput
		if room <= 0 {
			room = info.Window
		}
		if need <= room {
			return "", true
		}
		if room > best {
			best, bestModel = room, r.Model
		}
	}
	return fmt.Sprintf("your message alone is about %d tokens, more than the %d tokens %s can take (its context window less room for the answer); nothing was sent: shorten it, send a file's path instead of its text, or use a model with a larger window (models.%s.window declares one)",
		need, best, bestModel, bestModel), false
}
