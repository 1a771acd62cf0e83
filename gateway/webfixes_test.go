package gateway

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// TestWebPageSwitchAndFailure drives the page in Chromium for two fixes of
// issue 25 item 12: after switching sessions the connection label says
// connecting… (not the previous stream's "live") until the new stream
// answers, and a failed turn is shown once, not by its stored failure row
// and again by turn_finished.
func TestWebPageSwitchAndFailure(t *testing.T) {
	chrome := findChromium(t)
	h := newHarness(t, harnessOptions{})
	h.env.Srv.Script(fakellm.RawError(400, `{"error":{"message":"Invalid value for 'messages'.","type":"invalid_request_error","param":null,"code":null}}`))

	ctx := newBrowser(t, chrome)
	poll := pollJS
	run := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("conn").textContent + " | " + document.getElementById("status").textContent + "\n" + document.getElementById("transcript").innerText`))
			t.Fatalf("%s: %v\npage:\n%s", step, err, page)
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
	const failures = `String(document.querySelectorAll("#transcript .msg.failure").length)`

	run("sign in",
		chromedp.Navigate(h.srv.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), h.token),
		chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.ID("new-session")),
	)
	run("first session, a turn that fails",
		chromedp.Click(chromedp.ID("new-session")),
		poll(`!document.getElementById("composer").disabled && document.getElementById("conn").textContent === "live"`),
		chromedp.SendKeys(chromedp.ID("composer"), "this will fail"+kb.Enter),
		poll(`document.getElementById("status").textContent.includes("turn ended")`),
	)
	if n := eval(failures); n != "1" {
		t.Errorf("the failed turn is shown %s times, want once:\n%s", n, eval(`document.getElementById("transcript").innerText`))
	}
	run("second session, live",
		chromedp.Click(chromedp.ID("new-session")),
		poll(`document.querySelectorAll("#sessions li").length === 2 && document.getElementById("transcript").innerText === "" && document.getElementById("conn").textContent === "live"`),
	)
	// Read in the same task as the click: openSession's synchronous part
	// has run, the new stream cannot have answered yet.
	label := eval(`(() => {
		const li = Array.from(document.querySelectorAll("#sessions li")).find(l => !l.classList.contains("active"));
		li.click();
		return document.getElementById("conn").textContent;
	})()`)
	if label != "connecting…" {
		t.Errorf("right after switching sessions the label says %q, want connecting…", label)
	}
	run("back on the first session, live again",
		poll(`document.getElementById("conn").textContent === "live" && document.getElementById("transcript").innerText.includes("this will fail")`),
	)
	if n := eval(failures); n != "1" {
		t.Errorf("after switching back the failed turn is shown %s times, want once", n)
	}
}
