package tui

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// tick is how often streamed text reaches the screen: the render is
// throttled to it, whatever the token rate. No tick runs while idle.
const tick = 50 * time.Millisecond

// quitWindow: a second Ctrl+C on an idle prompt within it quits.
const quitWindow = 3 * time.Second

type styles struct {
	dim, bold, accent, warn, fail, add, del, hunk, user, footer lipgloss.Style
	md                                                          mdStyles
}

func newStyles() styles {
	return styles{
		dim:    lipgloss.NewStyle().Faint(true),
		bold:   lipgloss.NewStyle().Bold(true),
		accent: lipgloss.NewStyle().Foreground(lipgloss.Color("14")),
		warn:   lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("11")),
		fail:   lipgloss.NewStyle().Foreground(lipgloss.Color("9")),
		add:    lipgloss.NewStyle().Foreground(lipgloss.Color("10")),
		del:    lipgloss.NewStyle().Foreground(lipgloss.Color("9")),
		hunk:   lipgloss.NewStyle().Foreground(lipgloss.Color("13")),
		user:   lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("12")),
		footer: lipgloss.NewStyle().Faint(true),
		md:     newMDStyles(),
	}
}

type runningTool struct {
	name, arg string
	since     time.Time
}

type steerItem struct{ id, text string }

type pendingApproval struct {
	a     Approval
	reply chan Decision
}

type model struct {
	ui  *UI
	st  styles
	in  textarea.Model
	his *history

	width, height int
	started       bool // Start returned
	bannerShown   bool // drawn with the early frame
	startErr      error
	info          Info

	// The running turn.
	running     bool
	cancel      context.CancelFunc
	stopping    bool
	quitMidTurn bool
	stream      string // answer text of this turn not yet printed above
	inFence     bool   // stream starts inside a code fence
	reasoning   string
	tools       map[string]runningTool
	approval    *pendingApproval
	queued      []string
	steering    []steerItem // offered to the running turn, not yet joined
	steerSeq    int

	notice    string
	lastCtrlC time.Time
	searchQ   string // Ctrl+R: the query, and the index found last
	searchAt  int
	files     []string // workspace files, for @ completion, listed once
	hint      string   // completion candidates
	lastFrame string
	picker    *picker
	now       func() time.Time // the clock ages are shown by (fixed in tests)
}

func newModel(u *UI) *model {
	in := textarea.New()
	in.ShowLineNumbers = false
	in.Prompt = "› "
	in.Placeholder = "Message (Enter sends, Alt+Enter new line, / commands, @ files)"
	in.CharLimit = 0
	in.MaxHeight = 0
	in.SetHeight(1)
	in.SetWidth(80)
	in.KeyMap.InsertNewline = key.NewBinding(key.WithKeys("shift+enter", "alt+enter", "ctrl+j"))
	// Up/Down move between lines; at the first/last line they browse the
	// history (handled before the textarea sees them).
	// The terminal's own cursor: it blinks without a timer waking the
	// program twice a second, so an idle chat costs no CPU.
	in.SetVirtualCursor(false)
	in.Focus()
	return &model{ui: u, st: newStyles(), in: in, his: loadHistory(u.opts.HistoryFile),
		width: 80, height: 24, tools: map[string]runningTool{}, info: Info{ContextPct: -1}, now: time.Now}
}

func (m *model) Init() tea.Cmd {
	var cmds []tea.Cmd
	if m.ui.opts.Banner != "" && !m.bannerShown {
		cmds = append(cmds, tea.Println(m.st.dim.Render(m.ui.opts.Banner)))
	}
	// Start runs beside the program (UI.Run), so that quitting while it
	// runs waits for it to return.
	m.started = m.ui.opts.Start == nil
	return tea.Sequence(cmds...)
}

func (m *model) commands() []Command {
	cs := append([]Command{{"/help", "this help"}, {"/exit", "quit (also /quit, Ctrl+D, Ctrl+C twice)"}, {"/quit", "quit"}}, m.ui.opts.Commands...)
	sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	return cs
}

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.in.SetWidth(max(10, m.width-2))
		return m, nil
	case startedMsg:
		return m, m.startDone(msg)
	case pickerMsg:
		return m, m.pickerLoaded(msg)
	case tickMsg:
		return m, m.pull(true)
	case discardMsg, steeredMsg, statusMsg, toolStartMsg, toolEndMsg, approvalMsg, approvalGoneMsg:
		return m, m.turnEvent(msg)
	case turnDoneMsg:
		return m, m.turnDone(msg)
	case commandDoneMsg:
		m.running = false
		if msg.Info != nil {
			m.info = *msg.Info
		}
		var out []tea.Cmd
		if s := strings.TrimRight(msg.Output, "\n"); s != "" {
			out = append(out, tea.Println(s))
		}
		if msg.Quit {
			return m, tea.Sequence(append(out, tea.Quit)...)
		}
		return m, tea.Sequence(append(out, m.next())...)
	case tea.PasteMsg:
		if m.approval != nil {
			return m, nil
		}
		// One paste is one message, newlines and indentation kept.
		m.in.InsertString(strings.ReplaceAll(msg.Content, "\r\n", "\n"))
		m.fitInput()
		return m, nil
	case tea.KeyPressMsg:
		return m.key(msg)
	}
	var cmd tea.Cmd
	m.in, cmd = m.in.Update(msg)
	return m, cmd
}

func (m *model) startDone(msg startedMsg) tea.Cmd {
	if msg.err != nil {
		m.startErr = msg.err
		return tea.Quit
	}
	m.started, m.info = true, msg.info
	if m.ui.opts.PickAtStart && m.ui.opts.ListSessions != nil {
		return m.openPicker()
	}
	return m.next()
}

func (m *model) pickerLoaded(msg pickerMsg) tea.Cmd {
	m.running = false
	p := m.picker
	if p == nil {
		return m.next() // closed while it loaded
	}
	if msg.err != nil || len(msg.items) == 0 {
		m.picker = nil
		line := "no sessions yet"
		if msg.err != nil {
			line = m.st.fail.Render("talaria: " + msg.err.Error())
		}
		return tea.Sequence(tea.Println(line), m.next())
	}
	p.items, p.loading = msg.items, false
	p.filter()
	if p.chosen {
		if _, id := m.pickerKey("enter", ""); id != "" {
			return m.command("/sessions " + id)
		}
	}
	return nil
}

// turnEvent takes what a running turn reports; what streamed before it
// is printed first.
func (m *model) turnEvent(msg tea.Msg) tea.Cmd {
	if _, ok := msg.(discardMsg); ok {
		m.stream = ""
		return tea.Println(m.st.dim.Render("· the stream broke off and is retried; text above may repeat"))
	}
	if _, ok := msg.(approvalGoneMsg); ok {
		m.approval = nil
		return nil
	}
	cmd := m.flush()
	switch msg := msg.(type) {
	case steeredMsg:
		for i, it := range m.steering {
			if it.id == string(msg) {
				m.steering = append(m.steering[:i:i], m.steering[i+1:]...)
				return tea.Sequence(cmd, tea.Println(m.echo(it.text)+"\n"+m.st.dim.Render("· joined the turn")))
			}
		}
	case statusMsg:
		return tea.Sequence(cmd, tea.Println(m.st.dim.Render("· "+string(msg))))
	case toolStartMsg:
		m.tools[msg.id] = runningTool{msg.name, msg.arg, time.Now()}
	case toolEndMsg:
		delete(m.tools, msg.id)
		return tea.Sequence(cmd, tea.Println(m.toolCard(msg)))
	case approvalMsg:
		m.approval = &pendingApproval{msg.a, msg.reply}
	}
	return cmd
}

func (m *model) turnDone(msg turnDoneMsg) tea.Cmd {
	cmd := m.flush()
	m.running, m.stopping, m.cancel, m.approval = false, false, nil, nil
	m.tools = map[string]runningTool{}
	m.reasoning = ""
	m.info = msg.Info
	// Messages the turn did not take run next, in the order typed.
	for i := len(m.steering) - 1; i >= 0; i-- {
		m.queued = append([]string{m.steering[i].text}, m.queued...)
	}
	m.steering = nil
	out := []tea.Cmd{cmd}
	if msg.Failure != "" {
		out = append(out, tea.Println(m.st.fail.Render("talaria: "+msg.Failure)))
	}
	if msg.Summary != "" {
		out = append(out, tea.Println(m.st.dim.Render(msg.Summary)))
	}
	if m.quitMidTurn {
		return tea.Sequence(append(out, tea.Quit)...)
	}
	return tea.Sequence(append(out, m.next())...)
}

func (m *model) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	s := k.String()
	if s != "ctrl+c" {
		m.notice = ""
	}
	if m.approval != nil {
		return m.approvalKey(s)
	}
	if m.picker != nil {
		_, id := m.pickerKey(s, k.Text)
		if id != "" {
			return m, m.command("/sessions " + id)
		}
		if m.picker == nil && !m.running {
			return m, m.next()
		}
		return m, nil
	}
	if s != "ctrl+r" {
		m.searchQ = ""
	}
	switch s {
	case "ctrl+c":
		return m, m.ctrlC()
	case "esc":
		if m.running && !m.stopping {
			m.stop()
			m.notice = "stopping the turn"
		}
		m.hint = ""
		return m, nil
	case "ctrl+d":
		if m.in.Value() == "" && !m.running {
			return m, tea.Quit
		}
	case "enter":
		v := m.in.Value()
		if strings.HasSuffix(v, "\\") {
			// A trailing backslash asks for a new line.
			m.in.SetValue(strings.TrimSuffix(v, "\\") + "\n")
			m.fitInput()
			return m, nil
		}
		return m, m.submit(v)
	case "tab":
		m.complete()
		return m, nil
	case "up", "ctrl+p", "down", "ctrl+n", "ctrl+r":
		if m.historyKey(s) {
			return m, nil
		}
	}
	var cmd tea.Cmd
	m.in, cmd = m.in.Update(k)
	m.fitInput()
	m.updateHint()
	return m, cmd
}

// ctrlC stops a running turn (a second one quits), else clears the input,
// else quits when pressed twice.
func (m *model) ctrlC() tea.Cmd {
	if m.running {
		if m.stopping {
			m.quitMidTurn = true
			return tea.Quit
		}
		m.stop()
		m.notice = "stopping the turn (Ctrl+C again to quit)"
		return nil
	}
	if m.in.Value() != "" {
		m.in.Reset()
		m.fitInput()
		return nil
	}
	if time.Since(m.lastCtrlC) < quitWindow {
		return tea.Quit
	}
	m.lastCtrlC = time.Now()
	m.notice = "Ctrl+C again to quit, or /exit"
	return nil
}

// historyKey browses (Up/Down on the first/last line) or searches
// (Ctrl+R) the history; false leaves the key to the editor.
func (m *model) historyKey(s string) bool {
	switch s {
	case "up", "ctrl+p":
		if m.in.Line() != 0 {
			return false
		}
		if h, ok := m.his.prev(m.in.Value()); ok {
			m.setInput(h)
			m.in.MoveToBegin()
		}
	case "down", "ctrl+n":
		if m.in.Line() != m.in.LineCount()-1 {
			return false
		}
		if h, ok := m.his.next(); ok {
			m.setInput(h)
		}
	case "ctrl+r":
		if m.searchQ == "" {
			m.searchQ, m.searchAt = m.in.Value(), len(m.his.entries)
		}
		if m.searchQ == "" {
			m.notice = "Ctrl+R: type part of an earlier message first"
			return true
		}
		if h, at, ok := m.his.search(m.searchQ, m.searchAt); ok {
			m.searchAt = at
			m.setInput(h)
			m.notice = "history search «" + m.searchQ + "» (Ctrl+R older)"
		} else {
			m.notice = "no older message contains «" + m.searchQ + "»"
		}
	}
	return true
}

func (m *model) approvalKey(s string) (tea.Model, tea.Cmd) {
	var d Decision
	switch s {
	case "y", "Y":
		d = Allow
	case "n", "N", "esc":
		d = Deny
	case "a", "A":
		d = AllowTool
	case "p", "P":
		if m.approval.a.Prefix == "" {
			return m, nil
		}
		d = AllowPrefix
	case "ctrl+c":
		m.approval.reply <- Deny
		m.approval = nil
		m.stop()
		m.notice = "stopping the turn (Ctrl+C again to quit)"
		return m, nil
	default:
		return m, nil // anything else is not an answer: a typo must not decide
	}
	a := m.approval.a
	m.approval.reply <- d
	m.approval = nil
	word := map[Decision]string{Allow: "allowed", Deny: "declined", AllowTool: "allowed (always, this chat)", AllowPrefix: "allowed (always for «" + a.Prefix + " …»)"}[d]
	return m, tea.Println(m.st.dim.Render(fmt.Sprintf("· %s %s: %s", a.Tool, a.Summary, word)))
}

func (m *model) stop() {
	m.stopping = true
	if m.cancel != nil {
		m.cancel()
	}
}

func (m *model) setInput(s string) {
	m.in.SetValue(s)
	m.fitInput()
}

// fitInput grows the editor with its text, up to a third of the screen.
func (m *model) fitInput() {
	n := m.in.LineCount()
	for _, l := range strings.Split(m.in.Value(), "\n") {
		if w := m.in.Width(); w > 0 {
			n += ansi.StringWidth(l) / w
		}
	}
	m.in.SetHeight(max(1, min(n, max(3, m.height/3))))
}

func (m *model) updateHint() {
	m.hint = ""
	word, cands := m.completions(m.in.Value())
	if word == "" || len(cands) == 0 || (len(cands) == 1 && cands[0] == word) {
		return
	}
	if len(cands) > 6 {
		cands = append(cands[:6], fmt.Sprintf("… %d more", len(cands)-6))
	}
	m.hint = strings.Join(cands, "  ")
}

func (m *model) complete() {
	v := m.in.Value()
	word, cands := m.completions(v)
	if len(cands) == 0 {
		return
	}
	p := commonPrefix(cands)
	if len(cands) == 1 {
		p += " "
	}
	if len(p) > len(word) {
		m.setInput(v[:len(v)-len(word)] + p)
	}
	m.updateHint()
}

// submit sends the input: a command runs, a message starts a turn, and
// either waits (queued) while a turn runs or the chat is still starting.
func (m *model) submit(v string) tea.Cmd {
	text := strings.TrimSpace(v)
	m.hint = ""
	if text == "" {
		return nil
	}
	m.his.add(strings.TrimRight(v, " \n"))
	m.in.Reset()
	m.fitInput()
	msg := strings.TrimRight(v, " \n")
	// A message typed during a turn steers it (a /command waits for the
	// turn's end).
	if m.cancel != nil && !m.stopping && !strings.HasPrefix(text, "/") && m.ui.opts.Steer != nil {
		m.steerSeq++
		id := fmt.Sprintf("steer-%d", m.steerSeq)
		if m.ui.opts.Steer(id, msg) {
			m.steering = append(m.steering, steerItem{id, msg})
			return nil
		}
	}
	m.queued = append(m.queued, msg)
	if m.running || !m.started {
		return nil
	}
	return m.next()
}

// next starts the first queued message, if any and nothing runs.
func (m *model) next() tea.Cmd {
	if m.running || !m.started || len(m.queued) == 0 {
		return nil
	}
	text := m.queued[0]
	m.queued = m.queued[1:]
	if strings.HasPrefix(text, "/") {
		return m.command(text)
	}
	m.running, m.stopping = true, false
	ctx, cancel := context.WithCancel(m.ui.baseCtx())
	m.cancel = cancel
	turn := m.ui.opts.Turn
	echo := m.echo(text)
	m.ui.turns.Add(1)
	run := func() tea.Msg {
		defer m.ui.turns.Done()
		end := turn(ctx, text)
		cancel()
		return turnDoneMsg(end)
	}
	return tea.Sequence(tea.Println(echo), tea.Batch(run, m.tickCmd()))
}

// echo is the user's message as printed above: marked, kept verbatim.
func (m *model) echo(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		p := "  "
		if i == 0 {
			p = "› "
		}
		lines[i] = m.st.user.Render(p) + l
	}
	return "\n" + strings.Join(lines, "\n")
}

func (m *model) command(line string) tea.Cmd {
	name, _, _ := strings.Cut(line, " ")
	switch name {
	case "/exit", "/quit":
		return tea.Quit
	case "/help":
		var b strings.Builder
		for _, c := range m.commands() {
			fmt.Fprintf(&b, "  %-10s %s\n", c.Name, c.About)
		}
		b.WriteString("Keys: Enter sends · Alt+Enter, Shift+Enter, Ctrl+J or a trailing \\ add a line · Up/Down history · Ctrl+R search it\n" +
			"      Tab completes /commands and @files · Esc or Ctrl+C stops a turn · Ctrl+C twice (or Ctrl+D) quits")
		return tea.Sequence(tea.Println(b.String()), m.next())
	}
	if name == "/sessions" && strings.TrimSpace(strings.TrimPrefix(line, name)) == "" && m.ui.opts.ListSessions != nil {
		return m.openPicker()
	}
	if m.ui.opts.Command == nil {
		return tea.Sequence(tea.Println("unknown command "+name+"; /help lists them"), m.next())
	}
	m.running = true
	run := m.ui.opts.Command
	ctx := m.ui.baseCtx()
	return func() tea.Msg { return commandDoneMsg(run(ctx, line)) }
}

// openPicker lists the sessions (off the UI's goroutine) for the picker.
func (m *model) openPicker() tea.Cmd {
	m.running = true // nothing else starts while the list loads
	// Open at once: what is typed while the list loads searches it.
	m.picker = &picker{loading: true}
	list, ctx := m.ui.opts.ListSessions, m.ui.baseCtx()
	return func() tea.Msg {
		items, err := list(ctx)
		return pickerMsg{items, err}
	}
}

func (m *model) tickCmd() tea.Cmd {
	return tea.Tick(tick, func(time.Time) tea.Msg { return tickMsg{} })
}

// pull takes what streamed since the last tick and prints the finished
// blocks of the answer above; again schedules the next tick.
func (m *model) pull(again bool) tea.Cmd {
	text, reasoning := m.ui.takeStream()
	if reasoning != "" {
		m.reasoning += reasoning
	}
	var cmds []tea.Cmd
	if text != "" {
		if m.reasoning != "" {
			cmds = append(cmds, tea.Println(m.reasoningBlock()))
			m.reasoning = ""
		}
		m.stream += text
		// Everything up to the last blank line outside a code fence is
		// finished: it goes above, into the scrollback.
		if cut := blockEnd(m.stream, m.inFence); cut > 0 {
			done := m.stream[:cut]
			m.stream = m.stream[cut:]
			m.inFence = fenceOpen(done, m.inFence)
			cmds = append(cmds, tea.Println(m.renderAnswer(done)))
		}
	}
	if again && m.running {
		cmds = append(cmds, m.tickCmd())
	}
	return tea.Sequence(cmds...)
}

// flush prints all that streamed, finished or not: a tool card, a status
// line or the end of the turn comes after it.
func (m *model) flush() tea.Cmd {
	cmd := m.pull(false)
	var cmds []tea.Cmd
	cmds = append(cmds, cmd)
	if m.reasoning != "" && len(m.tools) == 0 {
		cmds = append(cmds, tea.Println(m.reasoningBlock()))
		m.reasoning = ""
	}
	if strings.TrimSpace(m.stream) != "" {
		cmds = append(cmds, tea.Println(m.renderAnswer(m.stream)))
	}
	m.stream, m.inFence = "", false
	return tea.Sequence(cmds...)
}

func (m *model) renderAnswer(s string) string {
	s = strings.Trim(s, "\n")
	if m.inFence {
		s = "```\n" + s
	}
	return renderMarkdown(s, m.width, m.st.md)
}

// reasoningBlock is the model's thinking, dimmed and folded to its first
// lines: the answer is what matters.
func (m *model) reasoningBlock() string {
	lines := strings.Split(strings.TrimSpace(m.reasoning), "\n")
	const keep = 3
	more := ""
	if len(lines) > keep {
		more = fmt.Sprintf("\n  … %d more lines of thinking", len(lines)-keep)
		lines = lines[:keep]
	}
	for i := range lines {
		lines[i] = "  " + truncate(lines[i], m.width-2)
	}
	return m.st.dim.Render("thinking\n" + strings.Join(lines, "\n") + more)
}

// blockEnd is the end of the last finished block of s: just after its last
// blank line that is outside a code fence; 0 when there is none.
func blockEnd(s string, inFence bool) int {
	cut := 0
	pos := 0
	for _, l := range strings.SplitAfter(s, "\n") {
		pos += len(l)
		if !strings.HasSuffix(l, "\n") {
			break // the last, unfinished line
		}
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			inFence = !inFence
			if !inFence {
				cut = pos // a closed fence ends a block
			}
			continue
		}
		if t == "" && !inFence {
			cut = pos
		}
	}
	return cut
}

func fenceOpen(s string, inFence bool) bool {
	for _, l := range strings.Split(s, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			inFence = !inFence
		}
	}
	return inFence
}

func (m *model) toolCard(t toolEndMsg) string {
	mark := m.st.add.Render("✓")
	if t.failed {
		mark = m.st.fail.Render("✗")
	}
	head := fmt.Sprintf("%s %s %s %s", mark, m.st.bold.Render(t.name), truncate(t.arg, max(10, m.width-len(t.name)-16)), m.st.dim.Render(fmtDur(t.took)))
	lines := strings.Split(strings.TrimRight(t.result, "\n"), "\n")
	const keep = 3
	var b strings.Builder
	b.WriteString(head)
	if strings.TrimSpace(t.result) == "" {
		return b.String()
	}
	for i, l := range lines {
		if i == keep {
			b.WriteString("\n" + m.st.dim.Render(fmt.Sprintf("  ⎿ … %d more lines", len(lines)-keep)))
			break
		}
		b.WriteString("\n" + m.st.dim.Render("  ⎿ "+truncate(expandTabs(l), m.width-4)))
	}
	return b.String()
}

func fmtDur(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

func truncate(s string, w int) string { return ansi.Truncate(s, max(w, 1), "…") }

func (m *model) View() tea.View {
	var parts []string
	if m.running {
		if m.reasoning != "" {
			lines := strings.Split(strings.TrimSpace(m.reasoning), "\n")
			parts = append(parts, m.st.dim.Render("thinking… "+truncate(lines[len(lines)-1], m.width-12)))
		}
		if s := strings.Trim(m.stream, "\n"); s != "" {
			r := m.renderAnswer(s)
			// The live part never outgrows the screen: it is the tail of
			// a block still streaming.
			lines := strings.Split(r, "\n")
			if room := max(3, m.height-8); len(lines) > room {
				lines = lines[len(lines)-room:]
			}
			parts = append(parts, strings.Join(lines, "\n"))
		}
		ids := make([]string, 0, len(m.tools))
		for id := range m.tools {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			t := m.tools[id]
			parts = append(parts, m.st.accent.Render("⏺ ")+m.st.bold.Render(t.name)+" "+truncate(t.arg, m.width-len(t.name)-16)+m.st.dim.Render(" "+fmtDur(time.Since(t.since).Truncate(100*time.Millisecond))))
		}
	}
	for _, q := range m.steering {
		parts = append(parts, m.st.dim.Render("queued: "+truncate(strings.ReplaceAll(q.text, "\n", " ⏎ "), m.width-40)+" (joins the turn after its tool round)"))
	}
	for _, q := range m.queued {
		when := ""
		if m.running && strings.HasPrefix(q, "/") {
			when = " (runs when the turn ends)"
		}
		parts = append(parts, m.st.dim.Render("queued: "+truncate(strings.ReplaceAll(q, "\n", " ⏎ "), m.width-36)+when))
	}
	if m.approval != nil {
		parts = append(parts, m.approvalView())
	} else if m.picker != nil {
		parts = append(parts, m.pickerView())
	} else {
		parts = append(parts, m.in.View())
	}
	if m.hint != "" {
		parts = append(parts, m.st.accent.Render(truncate(m.hint, m.width)))
	}
	parts = append(parts, m.footer())
	v := tea.NewView(strings.Join(parts, "\n"))
	if m.approval == nil && m.picker == nil {
		if c := m.in.Cursor(); c != nil {
			// The editor's cursor, moved to where the editor is drawn.
			above := 0
			for _, p := range parts[:len(parts)-1-boolInt(m.hint != "")-1] {
				above += strings.Count(p, "\n") + 1
			}
			c.Y += above
			v.Cursor = c
		}
	}
	return v
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// footer is one line: state, model, context use, tokens, cost, session.
// When it does not fit, the session id gives way first (to its random
// tail; /session prints it whole), then the key hint, the model's
// provider, the session, the context use, the model: tokens and cost
// stay.
func (m *model) footer() string {
	var state, hint string
	switch {
	case m.notice != "":
		state = m.st.warn.Render(m.notice)
	case !m.started:
		state = "starting…"
	case m.running && m.stopping:
		state = "stopping…"
	case m.running:
		state, hint = "working", "Esc stops"
	}
	model, session := m.info.Model, m.info.Session
	if session == "" && m.started {
		session = "new session"
	}
	ctx := ""
	if m.info.ContextPct >= 0 {
		ctx = fmt.Sprintf("ctx %d%%", m.info.ContextPct)
	}
	spend := fmt.Sprintf("%s tok · $%.4f", humanCount(m.info.Tokens), m.info.CostUSD)
	line := func() string {
		var f []string
		for _, p := range []string{state, hint, model, ctx, spend, session} {
			if p != "" {
				f = append(f, p)
			}
		}
		return strings.Join(f, " · ")
	}
	for _, shorten := range []func(){
		func() {
			if i := strings.LastIndexByte(session, '-'); i >= 0 {
				session = "…" + session[i+1:]
			}
		},
		func() { hint = "" },
		func() {
			if i := strings.IndexByte(model, '/'); i >= 0 {
				model = model[i+1:]
			}
		},
		func() { session = "" },
		func() { ctx = "" },
		func() { model = "" },
	} {
		if ansi.StringWidth(line()) <= m.width {
			break
		}
		shorten()
	}
	return m.st.footer.Render(truncate(line(), m.width))
}

func humanCount(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func (u *UI) baseCtx() context.Context {
	if u.ctx == nil {
		return context.Background()
	}
	return u.ctx
}
