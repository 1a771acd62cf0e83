package main

import (
	"context"
	"sync"

	"github.com/talaria-agent/talaria/internal/memlimit"
	"github.com/talaria-agent/talaria/turn"
)

// memoryObserver starts keeping the GC memory limit a margin above the
// live heap (internal/memlimit) at the process's first model request.
// By then the session is loaded and projected, and its request body is
// being built: the live heap is about as large as it will get, and with
// GOGC alone it would grow to twice that over the calls that follow.
// Before that GOGC paces the load as it always did (a limit during it
// would only collect the rows being loaded more often).
type memoryObserver struct {
	getenv  func(string) string
	once    sync.Once
	tracker *memlimit.Tracker
}

// memoryObserverFor is the observer for run and chat, nil for the other
// commands: serve's live heap is many sessions' and changes with them,
// and the short commands hold no session. GOMEMLIMIT or GOGC set by the
// user leave the runtime alone (memlimit.Start).
func memoryObserverFor(args []string, getenv func(string) string) turn.Observer {
	if len(args) == 0 || (args[0] != "run" && args[0] != "chat") {
		return nil
	}
	return &memoryObserver{getenv: getenv}
}

func (m *memoryObserver) StartTurn(context.Context, turn.TurnInfo) turn.TurnObserver { return m }

func (m *memoryObserver) Event(ev *turn.Event) {
	if ev.Kind == turn.EventRequest {
		m.once.Do(func() { m.tracker = memlimit.Start(m.getenv) })
	}
}

func (m *memoryObserver) End(*turn.Result) {}
