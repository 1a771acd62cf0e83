package gateway

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// The web page shows the model's plan as a checklist when a todo call
// changes it, from the stored row's event, and again after a reload.
func TestWebPageShowsTodo(t *testing.T) {
	chrome := findChromium(t)
	h := newHarness(t, harnessOptions{})
	h.env.Srv.Script(
		fakellm.Calls(fakellm.ToolCall("todo", `{"action":"set","items":[{"id":"parse","text":"write the parser","status":"done"},{"id":"test","text":"test it","status":"in_progress"}]}`)),
		fakellm.Text("Planned."),
	)
	ctx := newBrowser(t, chrome)
	poll := pollJS
	run := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("transcript").innerText`))
			t.Fatalf("%s: %v\npage:\n%s", step, err, page)
		}
	}
	const shown = `(() => { const b = document.querySelector("#transcript .msg.todo"); return !!b && b.innerText.includes("plan 1/2 done") && b.innerText.includes("☑ write the parser") && b.innerText.includes("▶ test it") && !document.getElementById("transcript").innerText.includes('"status"'); })()`
	run("sign in",
		chromedp.Navigate(h.srv.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), h.token),
		chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.ID("new-session")),
	)
	run("a turn that sets a plan",
		chromedp.Click(chromedp.ID("new-session")),
		poll(`!document.getElementById("composer").disabled && document.getElementById("conn").textContent === "live"`),
		chromedp.SendKeys(chromedp.ID("composer"), "write a parser"+kb.Enter),
		poll(`document.getElementById("transcript").innerText.includes("Planned.")`),
		poll(shown),
	)
	run("after a reload",
		chromedp.Reload(),
		poll(`document.getElementById("conn").textContent === "live" && document.getElementById("transcript").innerText.includes("Planned.")`),
		poll(shown),
	)
}
