package gateway

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// findChromium returns a Chromium binary, or skips the test (one loud line)
// when there is none and CI is unset; in CI a missing browser fails.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if p := "/usr/bin/chromium"; fileExists(p) {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Chromium found, and CI is set: install it (apt-get install -y chromium); .ci/run does")
	}
	t.Skip("BROWSER TEST SKIPPED: no Chromium found (apt-get install -y chromium); CI runs it")
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// artifactsDir is where the screenshot goes: $TALARIA_ARTIFACTS, else the
// test's temp dir.
func artifactsDir(t *testing.T) string {
	if d := os.Getenv("TALARIA_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err == nil {
			return d
		}
	}
	return t.TempDir()
}

// TestWebPage drives the embedded page in a real headless Chromium: sign in,
// create a session, send a message and watch the answer stream in with a
// tool card, approve a tool, stop a turn with Esc, reload and see the same
// transcript.
func TestWebPage(t *testing.T) {
	chrome := findChromium(t)
	h := newHarness(t, harnessOptions{})
	answer := strings.Repeat("Streaming answer word by word. ", 20) + "THE END"
	h.env.Srv.Script(
		fakellm.TextCalls("Let me look.", fakellm.ToolCall("list_dir", `{"path":"."}`)),
		fakellm.Text(answer).WithChunkDelay(15*time.Millisecond),
		fakellm.Calls(fakellm.ToolCall("write_file", `{"path":"approved.txt","content":"yes"}`)),
		fakellm.Text("File written."),
		fakellm.Calls(fakellm.ToolCall("wait_gate", `{}`)),
	)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer acancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, tcancel := context.WithTimeout(bctx, 120*time.Second)
	defer tcancel()

	poll := func(js string) chromedp.Action[chromedp.Void] {
		p := chromedp.Poll[bool](js, chromedp.WithPollingTimeout(30*time.Second))
		return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
			_, err := p(ctx, t)
			return chromedp.Void{}, err
		}
	}
	eval := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("evaluate: %v", err)
		}
		return v
	}
	run := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		start := time.Now()
		if err := chromedp.Do(ctx, actions...); err != nil {
			dctx, dcancel := context.WithTimeout(bctx, 5*time.Second)
			page, _ := chromedp.Run(dctx, chromedp.Evaluate[string](`document.getElementById("status").textContent + "\n---\n" + document.getElementById("transcript").innerText`))
			dcancel()
			t.Fatalf("%s (after %s): %v\npage:\n%s", step, time.Since(start).Round(time.Millisecond), err, page)
		}
		t.Logf("%s: %s", step, time.Since(start).Round(time.Millisecond))
	}
	// The first Run starts the browser and must not carry the timeout.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	run("sign in",
		chromedp.Navigate(h.srv.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), h.token),
		chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.ID("new-session")),
	)
	run("create a session",
		chromedp.Click(chromedp.ID("new-session")),
		poll(`!document.getElementById("composer").disabled && document.querySelector("#sessions li.active") !== null`),
	)
	run("send and watch it stream",
		chromedp.SendKeys(chromedp.ID("composer"), "what is here?"+kb.Enter),
		// Part of the answer is on the page while the rest still streams.
		poll(`(() => { const d = document.querySelector(".msg.draft .text"); return d !== null && d.textContent.includes("Streaming") && !d.textContent.includes("THE END"); })()`),
		poll(`document.getElementById("transcript").innerText.includes("THE END") && document.querySelector(".msg.draft") === null`),
		poll(`document.querySelectorAll("details.tool-card.done").length === 1`),
	)
	run("approve a tool",
		chromedp.SendKeys(chromedp.ID("composer"), "write it"+kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(".approve")),
		chromedp.Click(chromedp.CSS(".approve")),
		poll(`document.getElementById("transcript").innerText.includes("File written.")`),
	)
	if !fileExists(filepath.Join(h.env.Workspace, "approved.txt")) {
		t.Fatal("the approved write did not happen")
	}
	run("stop a turn with Esc",
		chromedp.SendKeys(chromedp.ID("composer"), "wait for it"+kb.Enter),
		chromedp.WaitVisible(chromedp.ID("stop")),
		poll(`document.querySelector('details.tool-card summary') !== null && Array.from(document.querySelectorAll("details.tool-card summary")).some(s => s.textContent.includes("wait_gate"))`),
	)
	select {
	case <-h.gate.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the gated tool never started")
	}
	run("stopped",
		chromedp.SendKeys(chromedp.ID("composer"), kb.Escape),
		poll(`document.getElementById("status").textContent.includes("interrupted")`),
		chromedp.WaitNotVisible(chromedp.ID("stop")),
	)
	const transcriptJS = `Array.from(document.querySelectorAll(".msg.user, .msg.assistant")).map(e => e.className.replace(" draft", "") + ": " + e.innerText).join("\n") + "\ncards: " + document.querySelectorAll("details.tool-card").length`
	before := eval(transcriptJS)
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := artifactsDir(t)
	path := filepath.Join(dir, "webpage.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	run("reload",
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.ID("transcript")),
		poll(`document.getElementById("transcript").innerText.includes("File written.") && document.querySelectorAll("details.tool-card").length === 3`),
	)
	after := eval(transcriptJS)
	if before != after {
		t.Fatalf("transcript after reload differs:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	for _, want := range []string{"what is here?", "THE END", "write it", "File written.", "wait for it", "cards: 3"} {
		if !strings.Contains(after, want) {
			t.Errorf("transcript lacks %q:\n%s", want, after)
		}
	}
}
