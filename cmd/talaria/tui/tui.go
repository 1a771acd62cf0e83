// Package tui is the terminal UI of `talaria chat`: a multi-line editor
// with history, the answer streaming in as rendered markdown, tool cards,
// approvals with a diff, slash commands and a footer. It knows nothing of
// agents: the chat command hands it functions that run a turn or a
// command, and feeds a turn's events back through the UI's methods.
//
// Finished output is printed above the live area (tea.Println), so the
// terminal's own scrollback keeps the transcript after exit.
package tui

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/term"
)

// Options configure a UI.
type Options struct {
	In  io.Reader // nil: the process's terminal
	Out io.Writer
	Env []string // the environment the colour profile is read from

	Banner      string // printed once above the UI
	Workspace   string // where @path completion looks
	HistoryFile string // "" keeps no history

	// Start sets the chat up (database, providers) while the first frame
	// is already on screen; a message sent before it returns waits.
	Start func(ctx context.Context) (Info, error)
	// Turn runs one turn of text to its end, reporting through the UI's
	// event methods (TextDelta, ToolStart …). Cancelling ctx stops it.
	Turn func(ctx context.Context, text string) TurnEnd
	// Steer offers a message typed while a turn runs to that turn; id
	// comes back through UI.Steered when it joined. false: the turn takes
	// no more messages, and the UI runs it as the next turn. nil: typed
	// messages wait for the turn's end.
	Steer func(id, text string) bool
	// ListSessions lists the sessions for the picker (/sessions without
	// an id); choosing one runs the command "/sessions ID". nil: /sessions
	// goes to Command.
	ListSessions func(ctx context.Context) ([]SessionItem, error)
	// PickAtStart opens the picker once Start returned (chat -r).
	PickAtStart bool
	// Command runs a slash command the UI does not handle itself.
	Command func(ctx context.Context, line string) CommandResult
	// Commands are the slash commands offered for completion, besides
	// the UI's own (/help, /exit, /quit).
	Commands []Command
}

// Command is a slash command and what it does, for /help and completion.
type Command struct{ Name, About string }

// Info is what the footer shows.
type Info struct {
	Model      string
	Session    string
	Tokens     int64
	CostUSD    float64
	ContextPct int // -1: unknown
}

// TurnEnd is how a turn ended.
type TurnEnd struct {
	Summary string // one dimmed line
	Failure string // shown in red when set
	Info    Info
}

// CommandResult is what a slash command printed and what changed.
type CommandResult struct {
	Output string
	Quit   bool
	Info   *Info // when set, replaces the footer's
}

// ErrInterrupted is returned by Run when the user quit while a turn ran.
var ErrInterrupted = errors.New("interrupted")

// UI is one running terminal UI. Its event methods may be called from any
// goroutine while a turn runs.
type UI struct {
	opts Options
	prog *tea.Program

	mu        sync.Mutex
	text      strings.Builder // text streamed since the last tick
	reasoning strings.Builder

	approvals approvalMemory

	// ctx is Run's: set-up, turns and commands run under it, and Run
	// waits for set-up and turns so a stopped turn is finalized before the caller
	// closes the store.
	ctx   context.Context
	turns sync.WaitGroup
}

// New makes a UI; Run shows it.
func New(opts Options) *UI {
	return &UI{opts: opts, approvals: approvalMemory{tools: map[string]bool{}}}
}

// Run shows the UI until the user quits. A start error is returned as it
// came; ErrInterrupted says the user quit while a turn ran.
func (u *UI) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	u.ctx = ctx
	defer func() {
		cancel()
		u.turns.Wait()
	}()
	m := newModel(u)
	// Keys typed from the early frame on are the UI's: the terminal goes
	// raw before it is drawn (a Ctrl+D typed at once is a key, not the end
	// of input), the program finds it raw and restores it to raw on exit,
	// and the state from before is restored here last.
	if restore := rawInput(u.opts.In); restore != nil {
		defer restore()
	}
	if u.earlyFrame(m) {
		m.bannerShown = true
	}
	opts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithOutput(u.opts.Out), tea.WithEnvironment(u.opts.Env),
		// The chat handles Ctrl+C as a key: one stops the turn, two quit.
		tea.WithoutSignalHandler(),
		// The renderer's ticker wakes at this rate even when idle; the
		// stream is drawn every tick (50 ms) anyway.
		tea.WithFPS(30)}
	if u.opts.In != nil {
		opts = append(opts, tea.WithInput(u.opts.In))
	}
	u.prog = tea.NewProgram(m, opts...)
	if start := u.opts.Start; start != nil {
		// Set-up runs while the first frame is on screen; Run returns only
		// once it did (quitting during it cancels it), so the caller never
		// races it for what it built.
		u.turns.Add(1)
		go func() {
			defer u.turns.Done()
			info, err := start(ctx)
			u.prog.Send(startedMsg{info, err})
		}()
	}
	final, err := u.prog.Run()
	if fm, ok := final.(*model); ok {
		if fm.startErr != nil {
			return fm.startErr
		}
		if fm.quitMidTurn {
			return ErrInterrupted
		}
	}
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return ErrInterrupted
	}
	return err
}

// earlyFrame draws the model's first view straight to the terminal before
// the program starts: the program draws its own first frame only on its
// renderer's first tick (1/30 s) after setting the terminal up, and the
// prompt should be on screen as soon as the process can put it there. The
// cursor goes back to the view's first line, where the program's first
// frame erases and redraws it in one write, so nothing flickers or stays
// behind. It draws only on a terminal; it reports whether it drew (the
// banner is then on screen).
func (u *UI) earlyFrame(m *model) bool {
	f, ok := u.opts.Out.(*os.File)
	if !ok || !term.IsTerminal(f.Fd()) {
		return false
	}
	w, h, err := term.GetSize(f.Fd())
	if err != nil || w <= 0 || h <= 0 {
		return false
	}
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	view := m.View().Content
	up := strings.Count(view, "\n") // from the view's last line to its first
	if u.opts.Banner != "" {
		view = m.st.dim.Render(u.opts.Banner) + "\n" + view
	}
	var b strings.Builder
	b.WriteString(strings.ReplaceAll(view, "\n", "\r\n"))
	b.WriteString("\r")
	if up > 0 {
		b.WriteString(ansi.CursorUp(up))
	}
	// The colours are brought down to what the terminal shows, as the
	// program's renderer does.
	cw := &colorprofile.Writer{Forward: f, Profile: colorprofile.Detect(f, u.opts.Env)}
	_, err = io.WriteString(cw, b.String())
	return err == nil
}

// rawInput puts the input terminal in raw mode and returns what restores
// its state; nil when the input is not a terminal.
func rawInput(in io.Reader) (restore func()) {
	f, ok := in.(*os.File)
	if in == nil {
		f, ok = os.Stdin, true
	}
	if !ok || !term.IsTerminal(f.Fd()) {
		return nil
	}
	st, err := term.MakeRaw(f.Fd())
	if err != nil {
		return nil
	}
	return func() { _ = term.Restore(f.Fd(), st) }
}

func (u *UI) send(msg tea.Msg) {
	if u.prog != nil {
		u.prog.Send(msg)
	}
}

// TextDelta appends streamed answer text; the screen takes it on its next
// tick, so a fast stream costs a frame every tick, not one per token.
func (u *UI) TextDelta(s string) {
	u.mu.Lock()
	u.text.WriteString(s)
	u.mu.Unlock()
}

// ReasoningDelta appends streamed reasoning, shown dimmed.
func (u *UI) ReasoningDelta(s string) {
	u.mu.Lock()
	u.reasoning.WriteString(s)
	u.mu.Unlock()
}

// takeStream returns and clears what streamed since the last call.
func (u *UI) takeStream() (text, reasoning string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	text, reasoning = u.text.String(), u.reasoning.String()
	u.text.Reset()
	u.reasoning.Reset()
	return text, reasoning
}

// Discard drops the text streamed since the last call began (the stream
// died and is retried).
func (u *UI) Discard() {
	u.mu.Lock()
	u.text.Reset()
	u.mu.Unlock()
	u.send(discardMsg{})
}

// ToolStart shows a running tool's card: its name and key argument.
func (u *UI) ToolStart(id, name, arg string) { u.send(toolStartMsg{id: id, name: name, arg: arg}) }

// ToolEnd prints the tool's finished card with a few lines of its result.
func (u *UI) ToolEnd(id, name, arg, result string, failed bool, took time.Duration) {
	u.send(toolEndMsg{id: id, name: name, arg: arg, result: result, failed: failed, took: took})
}

// Steered says the message Options.Steer took as id joined the turn.
func (u *UI) Steered(id string) { u.send(steeredMsg(id)) }

// Status shows a one-line status (retry, fallback, compression, guard).
func (u *UI) Status(line string) { u.send(statusMsg(line)) }

type (
	discardMsg   struct{}
	statusMsg    string
	steeredMsg   string
	toolStartMsg struct{ id, name, arg string }
	toolEndMsg   struct {
		id, name, arg, result string
		failed                bool
		took                  time.Duration
	}
	tickMsg    struct{}
	startedMsg struct {
		info Info
		err  error
	}
	turnDoneMsg TurnEnd
	pickerMsg   struct {
		items []SessionItem
		err   error
	}
	commandDoneMsg CommandResult
	approvalMsg    struct {
		a     Approval
		reply chan Decision
	}
)
