package ttytest

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

var ansiRE = regexp.MustCompile(`\x1b\[[0-9;?<=>]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[P_^X][^\x1b]*\x1b\\|\x1b[()][0-9A-Za-z]|\x1b[=>78c]`)

func strip(s string) string { return ansiRE.ReplaceAllString(s, "") }

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// TestMain removes the binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// binary builds cmd/talaria once for the package's tests.
func binary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the talaria binary; run without -short")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ttytest")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "talaria")
		cmd := exec.Command("go", "build", "-o", binPath, "github.com/talaria-agent/talaria/cmd/talaria")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// term is the binary running in a pty.
type term struct {
	t     *testing.T
	cmd   *exec.Cmd
	tty   *os.File
	mu    sync.Mutex
	out   bytes.Buffer
	first time.Time // when the first frame (the prompt) appeared
	start time.Time
	done  chan error
}

func startChat(t *testing.T, srv *fakellm.Server, ws string, extra ...string) *term {
	t.Helper()
	return startChatHome(t, srv, ws, t.TempDir(), extra...)
}

// startChatHome is startChat with a TALARIA_HOME (and its database) of
// the test's.
func startChatHome(t *testing.T, srv *fakellm.Server, ws, home string, extra ...string) *term {
	t.Helper()
	return startArgs(t, ws, home, append([]string{"chat", "--api", "openai", "--base-url", srv.OpenAIBaseURL(), "--model", "gpt-4.1", "--workspace", ws}, extra...)...)
}

// startArgs runs talaria with args in a pty, in ws, with home as its
// TALARIA_HOME.
func startArgs(t *testing.T, ws, home string, args ...string) *term {
	t.Helper()
	bin := binary(t)
	cmd := exec.Command(bin, args...)
	cmd.Dir = ws
	cmd.Env = []string{"TALARIA_HOME=" + home, "TERM=xterm-256color", "HOME=" + home, "PATH=" + os.Getenv("PATH")}
	tm := &term{t: t, cmd: cmd, done: make(chan error, 1)}
	tm.start = time.Now()
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 100})
	if err != nil {
		t.Fatalf("pty: %v", err)
	}
	tm.tty = f
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			if n > 0 {
				tm.mu.Lock()
				tm.out.Write(buf[:n])
				if tm.first.IsZero() && strings.Contains(strip(tm.out.String()), "›") {
					tm.first = time.Now()
				}
				tm.mu.Unlock()
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { tm.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
		_ = f.Close()
	})
	return tm
}

func (tm *term) screen() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return strip(tm.out.String())
}

// rendered is the terminal as a VT emulator of the pty's size shows it
// after everything written so far: the scrollback, then the screen.
func (tm *term) rendered() string {
	tm.mu.Lock()
	raw := bytes.Clone(tm.out.Bytes())
	tm.mu.Unlock()
	emu := vt.NewEmulator(100, 30)
	go func() { _, _ = io.Copy(io.Discard, emu) }() // answers to the UI's queries
	_, _ = emu.Write(raw)
	var kept strings.Builder
	if sb := emu.Scrollback(); sb != nil {
		for _, l := range sb.Lines() {
			kept.WriteString(l.String() + "\n")
		}
	}
	shown := kept.String() + emu.String()
	// Ends the drain; Emulator.Close would race with its Read.
	_ = emu.InputPipe().(io.Closer).Close()
	return shown
}

func (tm *term) send(s string) {
	tm.t.Helper()
	if _, err := tm.tty.WriteString(s); err != nil {
		tm.t.Fatalf("write to pty: %v", err)
	}
}

// wait waits for want to appear in the output after the mark'th byte.
func (tm *term) wait(want string) {
	tm.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		// The raw stream, stripped of escapes, holds what was written;
		// the emulated terminal holds what is shown, where the renderer
		// rewrote only the cells of a line that changed.
		if strings.Contains(tm.screen(), want) || strings.Contains(tm.rendered(), want) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	tm.t.Fatalf("the terminal never showed %q; it shows:\n%s\n--- written (escapes stripped):\n%s", want, tm.rendered(), tm.screen())
}

func (tm *term) exit() int {
	tm.t.Helper()
	select {
	case err := <-tm.done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			tm.t.Fatalf("wait: %v", err)
		}
		return 0
	case <-time.After(20 * time.Second):
		tm.t.Fatalf("talaria did not exit; it shows:\n%s", tm.screen())
		return -1
	}
}

// The whole path a person takes: start, paste a multi-line message, see
// the approval with its diff, approve, see the answer rendered, resize,
// run a command, quit with Ctrl+C twice; exit 0, the file written, one
// request holding the whole paste.
func TestChatInPTY(t *testing.T) {
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	srv.Script(
		fakellm.Calls(fakellm.ToolCall("write_file", `{"path":"hello.txt","content":"hi there\n"}`)),
		fakellm.Text("Done: I **wrote** the file.\n\n```go\nx := 1\n```\n"),
	)
	ws := t.TempDir()
	tm := startChat(t, srv, ws)
	tm.wait("new session")
	t.Logf("first frame after %v (process start → prompt drawn)", tm.first.Sub(tm.start))

	tm.send("\x1b[200~please write\n  hello.txt\x1b[201~")
	tm.send("\r")
	tm.wait("Allow write_file?")
	tm.wait("+hi there")
	tm.send("y")
	tm.wait("completed")
	scr := tm.screen()
	if !strings.Contains(scr, "wrote") || strings.Contains(scr, "**wrote**") {
		t.Errorf("the answer is not rendered as markdown:\n%s", scr)
	}
	if !strings.Contains(scr, "┌─ go") {
		t.Errorf("the code block is not drawn:\n%s", scr)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "hello.txt")); err != nil || string(b) != "hi there\n" {
		t.Errorf("hello.txt = %q, %v", b, err)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if u := lastUser(reqs[0]); u != "please write\n  hello.txt" {
		t.Errorf("the pasted message reached the model as %q", u)
	}

	if err := pty.Setsize(tm.tty, &pty.Winsize{Rows: 20, Cols: 60}); err != nil {
		t.Fatal(err)
	}
	tm.send("/help\r")
	tm.wait("Keys:")

	tm.send("\x03")
	tm.wait("Ctrl+C again to quit")
	tm.send("\x03")
	if code := tm.exit(); code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
	noChildren(t, tm.cmd.Process.Pid)
}

// Ctrl+C while the answer streams stops the turn and keeps the text; the
// Up arrow then recalls the message, and nothing escaped reaches a request.
func TestChatInterruptInPTY(t *testing.T) {
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	long := strings.Repeat("streaming words go on and on. ", 400)
	srv.Script(
		fakellm.Text("Begin. "+long).WithChunkDelay(20*time.Millisecond),
		fakellm.Text("second answer"),
	)
	ws := t.TempDir()
	tm := startChat(t, srv, ws)
	tm.wait("new session")
	tm.send("tell me a long story\r")
	tm.wait("streaming words")
	tm.send("\x03")
	tm.wait("interrupted")
	if !strings.Contains(tm.screen(), "streaming words") {
		t.Errorf("the streamed text was not kept")
	}
	tm.send("\x1b[A")
	tm.send("\r")
	tm.wait("second answer")
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if u := lastUser(reqs[1]); u != "tell me a long story" {
		t.Errorf("Up recalled %q", u)
	}
	for _, r := range reqs {
		if bytes.Contains(r.Body, []byte(`\u001b`)) {
			t.Errorf("an escape sequence reached a request: %s", r.Body)
		}
	}
	tm.send("/exit\r")
	if code := tm.exit(); code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
}

// TestFirstFrame measures process start → first frame, median of 10.
func TestFirstFrame(t *testing.T) {
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	var ds []time.Duration
	for range 10 {
		tm := startChat(t, srv, t.TempDir())
		tm.wait("›")
		tm.mu.Lock()
		ds = append(ds, tm.first.Sub(tm.start))
		tm.mu.Unlock()
		tm.send("\x04") // Ctrl+D on an empty prompt quits
		if code := tm.exit(); code != 0 {
			t.Errorf("exit %d", code)
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	t.Logf("first frame: median %v, min %v, max %v (n=%d)", ds[len(ds)/2], ds[0], ds[len(ds)-1], len(ds))
}

// An idle chat uses no CPU: no timer wakes it while nothing happens.
func TestIdleCPU(t *testing.T) {
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	tm := startChat(t, srv, t.TempDir())
	tm.wait("new session")
	time.Sleep(500 * time.Millisecond) // let start-up settle
	before := cpuTicks(t, tm.cmd.Process.Pid)
	time.Sleep(3 * time.Second)
	used := cpuTicks(t, tm.cmd.Process.Pid) - before
	t.Logf("idle for 3 s: %d clock ticks of CPU", used)
	if used > 10 { // 100 ms in 3 s: a busy loop or a fast timer would be far above
		t.Errorf("idle chat used %d ticks of CPU in 3 s", used)
	}
	tm.send("\x04")
	if code := tm.exit(); code != 0 {
		t.Errorf("exit %d", code)
	}
}

// cpuTicks is utime+stime of pid, in clock ticks.
func cpuTicks(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	var u, k int
	fmt.Sscan(f[11], &u)
	fmt.Sscan(f[12], &k)
	return u + k
}

func lastUser(r fakellm.Request) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Text
		}
	}
	return ""
}

// noChildren fails if a process whose parent was pid is still alive.
func noChildren(t *testing.T, pid int) {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i > 0 {
			f := strings.Fields(s[i+1:])
			if len(f) > 1 && f[1] == fmt.Sprint(pid) {
				t.Errorf("process %s (child of talaria) is still running", e.Name())
			}
		}
	}
}

// A message typed while the turn runs steers it: the TUI shows it queued,
// then "joined the turn", and the model's next call reads it as a user
// message of the same turn (one turn, two calls).
func TestChatSteerInPTY(t *testing.T) {
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	release := make(chan struct{})
	srv.SetDefault(func(r fakellm.Request) fakellm.Step {
		for _, m := range r.Messages {
			if m.Role == "user" && m.Text == "mention the README too" {
				return fakellm.Text("Steered: the README is mentioned.")
			}
		}
		<-release // the first call waits until the steering message is typed
		return fakellm.Calls(fakellm.ToolCall("list_dir", `{"path":"."}`))
	})
	ws := t.TempDir()
	tm := startChat(t, srv, ws)
	tm.wait("new session")
	tm.send("list the files\r")
	tm.wait("working · Esc stops")
	tm.send("mention the README too\r")
	tm.wait("queued: mention the README too")
	close(release)
	tm.wait("joined the turn")
	tm.wait("Steered: the README is mentioned.")
	tm.wait("completed")
	reqs := srv.Requests()
	if len(reqs) != 2 {
		for i, r := range reqs {
			t.Logf("request %d: %+v", i, r.Messages)
		}
		t.Fatalf("%d requests, want 2 (one turn: the tool call, then the answer)", len(reqs))
	}
	if u := lastUser(reqs[1]); u != "mention the README too" {
		t.Errorf("the second call's last user message is %q", u)
	}
	if strings.Count(tm.screen(), "completed") != 1 {
		t.Errorf("the steering message made a turn of its own:\n%s", tm.screen())
	}
	tm.send("/exit\r")
	if code := tm.exit(); code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
	noChildren(t, tm.cmd.Process.Pid)
}

// /model NAME switches the next turns' model: an unknown name is refused
// with the choices, a known one shows in the footer and goes in the next
// request; /model alone shows the current one.
func TestChatModelSwitchInPTY(t *testing.T) {
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	srv.Script(fakellm.Text("first answer"), fakellm.Text("second answer"))
	tm := startChat(t, srv, t.TempDir())
	tm.wait("new session")
	tm.send("hello\r")
	tm.wait("first answer")
	tm.send("/model gpt-4o-typo-xyz\r")
	tm.wait(`unknown model "gpt-4o-typo-xyz"; choices: gpt-4.1`)
	tm.send("/model gpt-4o\r")
	tm.wait("model: custom/gpt-4o for the next turns")
	tm.wait("custom/gpt-4o · ctx")
	tm.send("again\r")
	tm.wait("second answer")
	tm.send("/model\r")
	tm.wait("primary: custom/gpt-4o")
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0].Model != "gpt-4.1" || reqs[1].Model != "gpt-4o" {
		for _, r := range reqs {
			t.Logf("request model %q", r.Model)
		}
		t.Fatalf("want two requests, gpt-4.1 then gpt-4o")
	}
	if len(reqs[1].Messages) < 3 {
		t.Errorf("the switched model did not get the session's history: %+v", reqs[1].Messages)
	}
	tm.send("/exit\r")
	if code := tm.exit(); code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
}

// /model NAME goes to the configured provider that serves NAME: the next
// request reaches the other provider's endpoint, in its wire format, with
// the session's history; /model lists the models with their providers.
func TestChatModelAcrossProvidersInPTY(t *testing.T) {
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	srv.Script(fakellm.Text("first answer"), fakellm.Text("second answer"))
	home, ws := t.TempDir(), t.TempDir()
	cfg := "provider: local\nproviders:\n" +
		"  local: {api: openai, base_url: " + srv.OpenAIBaseURL() + ", model: gpt-4.1}\n" +
		"  other: {api: anthropic, base_url: " + srv.AnthropicBaseURL() + ", model: claude-sonnet-4-5}\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := startArgs(t, ws, home, "chat", "--workspace", ws)
	tm.wait("new session")
	tm.send("hello\r")
	tm.wait("first answer")
	tm.send("/model\r")
	tm.wait("claude-sonnet-4-5 (other)")
	tm.send("/model claude-sonnet-4-5\r")
	tm.wait("model: other/claude-sonnet-4-5 for the next turns")
	tm.send("again\r")
	tm.wait("second answer")
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if reqs[0].API != fakellm.APIOpenAI || reqs[0].Model != "gpt-4.1" {
		t.Errorf("first request: %s %s, want openai gpt-4.1", reqs[0].API, reqs[0].Model)
	}
	if reqs[1].API != fakellm.APIAnthropic || reqs[1].Model != "claude-sonnet-4-5" {
		t.Errorf("after /model: %s %s, want anthropic claude-sonnet-4-5", reqs[1].API, reqs[1].Model)
	}
	if len(reqs[1].Messages) < 3 {
		t.Errorf("the other provider did not get the session's history: %+v", reqs[1].Messages)
	}
	tm.send("/model gpt-4.1\r")
	tm.wait("model: local/gpt-4.1 for the next turns")
	tm.send("/exit\r")
	if code := tm.exit(); code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
}

// chat -r opens the session picker: subagent sessions show under their
// parent, typing searches, Enter resumes the chosen session with its last
// messages shown, and the next turn carries its history.
func TestChatResumePickerInPTY(t *testing.T) {
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	srv.SetDefault(func(r fakellm.Request) fakellm.Step {
		if len(r.Messages) > 0 && r.Messages[len(r.Messages)-1].Role == "tool" {
			return fakellm.Text("alpha answer")
		}
		switch lastUser(r) {
		case "alpha topic":
			return fakellm.Calls(fakellm.ToolCall("delegate", `{"task":"look around for alpha"}`))
		case "look around for alpha":
			return fakellm.Text("nothing much here")
		}
		return fakellm.Text("answer to " + lastUser(r))
	})
	home, ws := t.TempDir(), t.TempDir()
	for _, p := range []string{"alpha topic", "beta topic"} {
		cmd := exec.Command(binary(t), "run", "--api", "openai", "--base-url", srv.OpenAIBaseURL(), "--model", "gpt-4.1", "--workspace", ws, p)
		cmd.Env = []string{"TALARIA_HOME=" + home, "HOME=" + home, "PATH=" + os.Getenv("PATH")}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("run %q: %v\n%s", p, err, out)
		}
	}
	tm := startChatHome(t, srv, ws, home, "-r")
	tm.wait("Resume a session")
	tm.wait("└ look around for alpha") // the subagent, under its parent
	tm.send("alph")
	tm.send("\r")
	tm.wait("continuing session")
	tm.wait("alpha answer")
	n := len(srv.Requests())
	tm.send("and more\r")
	tm.wait("answer to and more")
	reqs := srv.Requests()
	if len(reqs) != n+1 {
		t.Fatalf("%d requests after the resume, want 1", len(reqs)-n)
	}
	if m := reqs[n].Messages; len(m) < 3 || m[0].Text != "alpha topic" {
		t.Errorf("the resumed turn lacks alpha's history: %+v", m)
	}
	tm.send("/exit\r")
	if code := tm.exit(); code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
}

// The prompt drawn before the UI starts (the early frame) is redrawn in
// place by the UI's first frame: the terminal (screen and scrollback)
// holds one banner and one prompt, not a stale copy above the live one.
func TestEarlyFrameRedrawnInPlace(t *testing.T) {
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	tm := startChat(t, srv, t.TempDir())
	tm.wait("new session") // set-up done: the UI has drawn its own frames
	const banner = "talaria chat — /help for commands"
	var shown string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		// What scrolled off the top counts too: a line printed above the UI
		// before its first frame may push the screen up.
		shown = tm.rendered()
		if strings.Contains(shown, "new session") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := strings.Count(shown, banner); n != 1 {
		t.Errorf("the terminal holds the banner %d times, want 1:\n%s", n, shown)
	}
	if n := strings.Count(shown, "›"); n != 1 {
		t.Errorf("the terminal holds %d prompts, want 1:\n%s", n, shown)
	}
	tm.send("\x04")
	if code := tm.exit(); code != 0 {
		t.Errorf("exit %d", code)
	}
}

// A shell command asking for approval shows the command and the sandbox
// it will run in, and runs once allowed.
func TestShellApprovalInPTY(t *testing.T) {
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	srv.Script(
		fakellm.Calls(fakellm.ToolCall("shell", `{"command":"echo approved-run > out.txt"}`)),
		fakellm.Text("Done."),
	)
	ws := t.TempDir()
	tm := startChat(t, srv, ws, "--sandbox", "off")
	tm.wait("new session")
	tm.send("run it\r")
	tm.wait("Allow shell?")
	tm.wait("echo approved-run")
	scr := tm.screen()
	card := scr[strings.LastIndex(scr, "Allow shell?"):]
	if !strings.Contains(card, "sandbox off") {
		t.Errorf("the approval does not name the sandbox the command runs in:\n%s", card)
	}
	tm.send("y")
	tm.wait("completed")
	if b, err := os.ReadFile(filepath.Join(ws, "out.txt")); err != nil || strings.TrimSpace(string(b)) != "approved-run" {
		t.Errorf("out.txt = %q, %v", b, err)
	}
	tm.send("\x04")
	if code := tm.exit(); code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
}
