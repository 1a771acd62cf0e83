package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/device"
	"github.com/chromedp/chromedp/kb"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// webPage is one signed-in tab of the embedded page in Chromium, talking
// to a real gateway over HTTP.
type webPage struct {
	t   *testing.T
	ctx context.Context
	h   *harness
}

// openWebPage starts Chromium, applies setup (device emulation) and signs
// in with the harness token; the page then shows the app view.
func openWebPage(t *testing.T, h *harness, setup ...chromedp.Action[chromedp.Void]) *webPage {
	t.Helper()
	p := &webPage{t: t, ctx: newBrowser(t, findChromium(t)), h: h}
	p.run("sign in", append(setup,
		chromedp.Navigate(h.srv.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), h.token),
		chromedp.Click(chromedp.ID("signin")),
		pollJS(`!document.getElementById("app-view").hidden`),
	)...)
	return p
}

func (p *webPage) run(step string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, actions...); err != nil {
		page, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.getElementById("status").textContent + "\n---\n" + document.getElementById("transcript").innerHTML`))
		p.t.Fatalf("%s: %v\npage:\n%s", step, err, page)
	}
}

func evalJS[T any](p *webPage, js string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		p.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// drawerOpenJS is true when the sessions drawer is fully in view.
const drawerOpenJS = `(() => { const r = document.getElementById("drawer").getBoundingClientRect(); return r.left === 0 && r.width >= 250 && getComputedStyle(document.getElementById("drawer")).visibility === "visible"; })()`

// newSessionAndSend creates a session on the page, sends text and waits
// until the answer's turn has finished (no draft left, send enabled).
func (p *webPage) newSessionAndSend(text string) {
	p.t.Helper()
	if evalJS[bool](p, `(b => b !== null && b.getBoundingClientRect().width > 0)(document.getElementById("drawer-toggle"))`) {
		// On a narrow screen the button is in the drawer.
		p.run("open the drawer", chromedp.Click(chromedp.ID("drawer-toggle")), pollJS(drawerOpenJS))
	}
	p.run("create a session",
		chromedp.WaitVisible(chromedp.ID("new-session")),
		chromedp.Click(chromedp.ID("new-session")),
		pollJS(`!document.getElementById("composer").disabled && document.getElementById("conn").textContent === "live"`),
	)
	p.run("send",
		chromedp.SendKeys(chromedp.ID("composer"), text+kb.Enter),
		pollJS(`document.querySelector("#transcript .msg.user") !== null`),
	)
}

// waitAnswer waits for the stored answer that replaces the draft, and
// for the stop button to go (also when the turn ended before the page had
// the answer to its POST).
func (p *webPage) waitAnswer() {
	p.t.Helper()
	p.run("answer stored",
		pollJS(`document.querySelector("#transcript .msg.assistant .md") !== null && document.querySelector(".msg.draft") === null && document.getElementById("stop").hidden`),
	)
}

const mdAnswer = "## Result\n\n" +
	"Here is **bold text** and *emphasis* and `inline code`.\n\n" +
	"```go\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n```\n\n" +
	"1. first\n2. second\n   - nested one\n   - nested two\n\n" +
	"| Name | Value |\n|------|------:|\n| a | 1 |\n| b | 2 |\n\n" +
	"> quoted\n\n" +
	"See [the docs](https://example.com/docs).\n\n" +
	"Trailing words so the answer streams for a while. "

// TestWebPageMarkdown: an answer streams in and is shown as markdown, both
// while it streams and once stored, and md.js renders the constructs the
// table below lists the way they are written there.
func TestWebPageMarkdown(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	answer := mdAnswer + strings.Repeat("More words to stream. ", 30) + "THE END"
	h.env.Srv.Script(fakellm.Text(answer).WithChunkDelay(10 * time.Millisecond))
	p := openWebPage(t, h)
	p.newSessionAndSend("show me markdown")
	// While the answer still streams, the draft is already rendered.
	p.run("draft rendered while streaming",
		pollJS(`(() => { const d = document.querySelector(".msg.draft .md"); return d !== null && d.querySelector("table td") !== null && !d.textContent.includes("THE END"); })()`),
	)
	p.waitAnswer()

	const box = `document.querySelector("#transcript .msg.assistant .md")`
	checks := []struct{ name, js string }{
		{"heading", box + `.querySelector("h2").textContent === "Result"`},
		{"strong", box + `.querySelector("p strong").textContent === "bold text"`},
		{"emphasis", box + `.querySelector("p em").textContent === "emphasis"`},
		{"inline code", box + `.querySelector("p code").textContent === "inline code"`},
		{"code block", (`(() => { const c = ` + box + `.querySelector("pre > code"); return c.className === "language-go" && c.textContent === "func main() {\n\tfmt.Println(\"hi\")\n}"; })()`)},
		{"ordered list", box + `.querySelectorAll("ol > li").length === 2`},
		{"nested list", box + `.querySelectorAll("ol > li > ul > li").length === 2`},
		{"table", box + `.querySelectorAll("table th").length === 2 && ` + box + `.querySelectorAll("table tbody td").length === 4`},
		{"table alignment", box + `.querySelectorAll("td.align-right").length === 2`},
		{"block quote", box + `.querySelector("blockquote").textContent.trim() === "quoted"`},
		{"link", (`(() => { const a = ` + box + `.querySelector("a"); return a.getAttribute("href") === "https://example.com/docs" && a.rel === "noopener noreferrer" && a.target === "_blank" && a.textContent === "the docs"; })()`)},
		{"no markdown syntax left", `!document.getElementById("transcript").innerText.includes("**") && !document.getElementById("transcript").innerText.includes("` + "```" + `") && !document.getElementById("transcript").innerText.includes("|---")`},
	}
	for _, c := range checks {
		if !evalJS[bool](p, c.js) {
			t.Errorf("%s: %s is false; answer box:\n%s", c.name, c.js, evalJS[string](p, box+`.innerHTML`))
		}
	}

	cases := []struct{ name, src, html string }{
		{"paragraphs and breaks", "one\ntwo\n\nthree", "<p>one<br>two</p><p>three</p>"},
		{"strong em code", "**a** *b* _c_ `d` ~~e~~", "<p><strong>a</strong> <em>b</em> <em>c</em> <code>d</code> <del>e</del></p>"},
		{"strong around em", "***x***", "<p><strong><em>x</em></strong></p>"},
		{"no emphasis inside words with _", "snake_case_name and 2 * 3 * 4", "<p>snake_case_name and 2 * 3 * 4</p>"},
		{"escapes", `\*not em\* and \` + "`" + `tick`, "<p>*not em* and `tick</p>"},
		{"code span keeps markup", "`<b>**x**</b>`", "<p><code>&lt;b&gt;**x**&lt;/b&gt;</code></p>"},
		{"headings", "# one\n###### six ##", "<h1>one</h1><h6>six</h6>"},
		{"hr", "a\n\n---\n\nb", "<p>a</p><hr><p>b</p>"},
		{"fence without language, unclosed", "```\nx < y\n", "<pre><code>x &lt; y</code></pre>"},
		{"tilde fence with language", "~~~python\nprint(1)\n~~~", `<pre><code class="language-python">print(1)</code></pre>`},
		{"fence language is a class name only", "```a\"b onclick=x\nz\n```", "<pre><code>z</code></pre>"},
		{"unordered list", "- a\n- b", "<ul><li>a</li><li>b</li></ul>"},
		{"ordered list with start", "3. a\n4. b", `<ol start="3"><li>a</li><li>b</li></ol>`},
		{"nested three levels", "- a\n  - b\n    - c", "<ul><li>a<ul><li>b<ul><li>c</li></ul></li></ul></li></ul>"},
		{"loose list", "- a\n\n- b", "<ul><li><p>a</p></li><li><p>b</p></li></ul>"},
		{"code block in a list item", "1. run:\n   ```sh\n   ls\n   ```", `<ol><li>run:<pre><code class="language-sh">ls</code></pre></li></ol>`},
		{"block quote with list", "> - a\n> - b", "<blockquote><ul><li>a</li><li>b</li></ul></blockquote>"},
		{"table with escaped pipe", "| a | b |\n|:-:|---|\n| `x\\|y` | **z** |", `<div class="table-wrap"><table><thead><tr><th class="align-center">a</th><th>b</th></tr></thead><tbody><tr><td class="align-center"><code>x|y</code></td><td><strong>z</strong></td></tr></tbody></table></div>`},
		{"autolink and bare url", "<https://a.example/x> and https://b.example/y.", `<p><a href="https://a.example/x" rel="noopener noreferrer" target="_blank">https://a.example/x</a> and <a href="https://b.example/y" rel="noopener noreferrer" target="_blank">https://b.example/y</a>.</p>`},
		{"url in parentheses", "(see https://c.example/p)", `<p>(see <a href="https://c.example/p" rel="noopener noreferrer" target="_blank">https://c.example/p</a>)</p>`},
		{"image becomes a link", "![alt text](https://d.example/i.png)", `<p><a href="https://d.example/i.png" rel="noopener noreferrer" target="_blank">alt text</a></p>`},
		{"unmatched delimiters stay", "**a and `b and [c](", "<p>**a and `b and [c](</p>"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := renderInPage(p, c.src); got != c.html {
				t.Errorf("mdRender(%q)\n got %s\nwant %s", c.src, got, c.html)
			}
		})
	}
}

// TestWebPageMarkdownStreamed: mdUpdate, fed an answer piece by piece as
// it streams, ends with the same DOM as one mdRender of the whole answer,
// and keeps the finished blocks instead of building them again.
func TestWebPageMarkdownStreamed(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	p := openWebPage(t, h)
	sources := map[string]string{
		"answer": mdAnswer,
		"fence with blank lines and column-0 lines": "intro\n\n```\ncode\n\nnot a paragraph\n\n# nor a heading\n```\n\nafter\n",
		"loose list across blank lines":             "- a\n\n- b\n\n  more of b\n\nafter the list\n\n1. x\n\n2. y\n",
		"quote, table, rule":                        "> q1\n> q2\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n---\n\n**end**",
		"unclosed fence at the end":                 "text\n\n~~~js\nlet a = 1;\n\nlet b = 2;\n",
		"crlf":                                      "one\r\n\r\ntwo\r\n\r\n- x\r\n",
	}
	for name, src := range sources {
		for _, size := range []int{1, 7, 16, 1000} {
			t.Run(fmt.Sprintf("%s/%d", name, size), func(t *testing.T) {
				js, err := json.Marshal(src)
				if err != nil {
					t.Fatal(err)
				}
				got := evalJS[string](p, fmt.Sprintf(`(() => {
					const src = %s, d = document.createElement("div"), whole = document.createElement("div");
					let kept = 0;
					for (let i = %d; ; i += %d) {
						mdUpdate(d, src.slice(0, Math.min(i, src.length)));
						kept = Math.max(kept, d.mdState.nodes);
						if (i >= src.length) break;
					}
					whole.append(mdRender(src));
					return (d.innerHTML === whole.innerHTML ? "same" : "differs:\n" + d.innerHTML + "\n" + whole.innerHTML) + " kept=" + kept;
				})()`, js, size, size))
				if !strings.HasPrefix(got, "same") {
					t.Errorf("streamed in pieces of %d: %s", size, got)
				}
				if name == "answer" && strings.HasSuffix(got, " kept=0") {
					t.Errorf("no finished block was kept while streaming: %s", got)
				}
			})
		}
	}
}

// renderInPage runs the page's md.js on src and returns the HTML it built.
func renderInPage(p *webPage, src string) string {
	p.t.Helper()
	js, err := json.Marshal(src)
	if err != nil {
		p.t.Fatal(err)
	}
	return evalJS[string](p, `(() => { const d = document.createElement("div"); d.append(mdRender(`+string(js)+`)); return d.innerHTML; })()`)
}

// pwnedJS sets the flag a payload would set if it ever ran.
const pwnedJS = `window.__pwned=1`

const hostileAnswer = `<img src=x onerror="` + pwnedJS + `"> <script>` + pwnedJS + `</script>

[l1](javascript:` + pwnedJS + `) [l2](JaVaScRiPt:` + pwnedJS + `) [l3](data:text/html,<script>` + pwnedJS + `</script>) [l4](&#106;avascript:` + pwnedJS + `) [l5](vbscript:msgbox) [l6](//evil.example/x) [l7](/relative)

<a href="javascript:` + pwnedJS + `">raw anchor</a> <javascript:` + pwnedJS + `> <svg onload="` + pwnedJS + `">

[attr](https://example.com/"onmouseover="` + pwnedJS + `"x=")

| cell | other |
|------|-------|
| <img src=x onerror=` + pwnedJS + `> | <b onclick="` + pwnedJS + `">bold</b> |

` + "```html\n<script>" + pwnedJS + "</script>\n```" + `

**<iframe src="javascript:` + pwnedJS + `"></iframe>**

[safe](https://example.com/safe)
`

// domSafetyJS is true when the element holds no element a payload could
// use: no on* attribute, no active element, and every link http(s),
// opened with noopener noreferrer in a new tab.
const domSafetyJS = `((root) => {
	const bad = [];
	for (const e of root.querySelectorAll("*")) {
		for (const a of e.attributes) if (a.name.toLowerCase().startsWith("on") || a.name.toLowerCase() === "style" || a.name.toLowerCase() === "src") bad.push(e.tagName + " " + a.name);
		if (!["P","BR","STRONG","EM","DEL","CODE","PRE","H1","H2","H3","H4","H5","H6","UL","OL","LI","BLOCKQUOTE","HR","TABLE","THEAD","TBODY","TR","TH","TD","DIV","A"].includes(e.tagName)) bad.push("element " + e.tagName);
		if (e.tagName === "A") {
			const h = e.getAttribute("href") || "";
			if (!/^https?:\/\//.test(h) || (e.protocol !== "http:" && e.protocol !== "https:")) bad.push("href " + h);
			if (e.rel !== "noopener noreferrer" || e.target !== "_blank") bad.push("rel/target " + e.rel + " " + e.target);
		}
	}
	return bad.join("; ");
})`

// TestWebPageMarkdownIsSafe: a hostile answer (raw HTML, script, event
// handlers, javascript:/data:/vbscript:/entity-encoded links, HTML in table
// cells, an attribute-breaking URL) is shown as text; only the http(s)
// link becomes a link. The page's CSP would also block inline script, so
// the DOM is checked, not only the flag.
func TestWebPageMarkdownIsSafe(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.env.Srv.Script(fakellm.Text(hostileAnswer))
	p := openWebPage(t, h)
	p.newSessionAndSend("be evil")
	p.waitAnswer()

	if bad := evalJS[string](p, domSafetyJS+`(document.getElementById("transcript"))`); bad != "" {
		t.Errorf("unsafe DOM in the transcript: %s\n%s", bad, evalJS[string](p, `document.getElementById("transcript").innerHTML`))
	}
	if evalJS[bool](p, `window.__pwned !== undefined`) {
		t.Error("a payload ran")
	}
	box := `document.querySelector("#transcript .msg.assistant .md")`
	links := evalJS[string](p, `Array.from(`+box+`.querySelectorAll("a")).map(a => a.textContent + "=" + a.getAttribute("href")).join(" ")`)
	if want := `attr=https://example.com/%22onmouseover=%22window.__pwned=1%22x=%22 safe=https://example.com/safe`; links != want {
		t.Errorf("links: %s\nwant %s", links, want)
	}
	text := evalJS[string](p, box+`.textContent`)
	for _, want := range []string{
		`<img src=x onerror="window.__pwned=1">`, `<script>window.__pwned=1</script>`,
		`[l1](javascript:window.__pwned=1)`, `[l2](JaVaScRiPt:`, `[l3](data:text/html,`, `[l4](&#106;avascript:`,
		`[l5](vbscript:msgbox)`, `[l6](//evil.example/x)`, `[l7](/relative)`,
		`<a href="javascript:window.__pwned=1">raw anchor</a>`, `<svg onload=`, `<b onclick=`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the answer does not show %q as text:\n%s", want, text)
		}
	}
	if n := evalJS[int](p, box+`.querySelectorAll("table td").length`); n != 2 {
		t.Errorf("the table has %d cells, want 2", n)
	}

	// The same checks on md.js alone, one payload at a time.
	cases := []struct {
		name, src string
		links     int // http(s) links expected
	}{
		{"javascript link", "[x](javascript:alert(1))", 0},
		{"mixed case scheme", "[x](JaVaScRiPt:alert(1))", 0},
		{"entity-encoded scheme", "[x](&#106;avascript:alert(1))", 0},
		{"named entity colon", "[x](javascript&colon;alert(1))", 0},
		{"percent-encoded scheme", "[x](%6Aavascript:alert(1))", 0},
		{"leading whitespace", "[x]( \tjavascript:alert(1))", 0},
		{"angle destination", "[x](<javascript:alert(1)>)", 0},
		{"control character in scheme", "[x](java\u0001script:alert(1))", 0},
		{"newline in scheme", "[x](java\nscript:alert(1))", 0},
		{"data url", "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)", 0},
		{"vbscript", "[x](vbscript:msgbox(1))", 0},
		{"file url", "[x](file:///etc/passwd)", 0},
		{"protocol-relative", "[x](//evil.example)", 0},
		{"scheme without slashes", "[x](https:evil.example)", 0},
		{"image with javascript", "![x](javascript:alert(1))", 0},
		{"autolink javascript", "<javascript:alert(1)>", 0},
		{"bare javascript", "javascript:alert(1)", 0},
		{"http host named javascript", "[x](http://javascript:alert(1))", 0},
		{"title breaking out", `[x](https://ok.example "t\" onclick=\"alert(1)")`, 1},
		{"quote in url", `[x](https://ok.example/a"onclick="alert(1))`, 1},
		{"bare url with quote", `https://ok.example/a"onclick="alert(1)`, 1},
		{"link in link text", "[[inner](https://a.example)](https://b.example)", 1},
		{"raw html block", "<div onclick=alert(1)><script>alert(1)</script></div>", 0},
		{"html in heading", "# <img src=x onerror=alert(1)>", 0},
		{"html in table cell", "| a |\n|---|\n| <iframe src=javascript:alert(1)> |", 0},
		{"html in list and quote", "- <b onmouseover=alert(1)>x</b>\n> <a href=javascript:alert(1)>y</a>", 0},
		{"deep nesting", strings.Repeat(">", 5000) + " x\n" + strings.Repeat("- ", 3000) + "y", 0},
		{"many brackets", strings.Repeat("[", 20000) + strings.Repeat("*a", 20000), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			js, err := json.Marshal(c.src)
			if err != nil {
				t.Fatal(err)
			}
			root := `(() => { const d = document.createElement("div"); d.append(mdRender(` + string(js) + `)); return d; })()`
			if bad := evalJS[string](p, domSafetyJS+`(`+root+`)`); bad != "" {
				t.Errorf("unsafe DOM: %s\n%s", bad, renderInPage(p, c.src))
			}
			if n := evalJS[int](p, `(`+root+`).querySelectorAll("a").length`); n != c.links {
				t.Errorf("%d links, want %d:\n%s", n, c.links, renderInPage(p, c.src))
			}
		})
	}
	if evalJS[bool](p, `window.__pwned !== undefined`) {
		t.Error("a payload ran")
	}
}

// TestWebPageNarrow: on a 390×844 phone the conversation has the width,
// wide code and tables scroll inside the answer instead of the page, and
// the sessions list is a drawer that opens and closes.
func TestWebPageNarrow(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	wide := "```\n" + strings.Repeat("x", 400) + "\n```\n\n| " + strings.Repeat("column | ", 20) + "\n|" + strings.Repeat("---|", 20) + "\n| " + strings.Repeat("value | ", 20) + "\n\n" +
		strings.Repeat("averyveryverylongwordwithoutanyspaces", 8) + " and some ordinary words after it."
	h.env.Srv.Script(fakellm.Text(wide))
	p := openWebPage(t, h, chromedp.Emulate(device.IPhone12))

	if got := evalJS[int](p, `window.innerWidth`); got != 390 {
		t.Fatalf("the viewport is %d px wide, want 390", got)
	}
	noPageScroll := `document.scrollingElement.scrollWidth <= 390`
	p.newSessionAndSend("something wide, " + strings.Repeat("pasted", 40))
	p.waitAnswer()

	for _, c := range []struct{ name, js string }{
		{"conversation width", `document.querySelector("main").getBoundingClientRect().width >= 340 && document.getElementById("transcript").getBoundingClientRect().width >= 340`},
		{"no horizontal page scroll", noPageScroll},
		{"answer inside the screen", `document.querySelector(".msg.assistant").getBoundingClientRect().right <= 390`},
		{"code block scrolls", `(() => { const p = document.querySelector(".msg.assistant pre"); return p.scrollWidth > p.clientWidth && p.getBoundingClientRect().right <= 390; })()`},
		{"table scrolls", `(() => { const w = document.querySelector(".msg.assistant .table-wrap"); return w.scrollWidth > w.clientWidth && w.getBoundingClientRect().right <= 390; })()`},
		{"drawer closed", `document.getElementById("drawer").getBoundingClientRect().right <= 0 && getComputedStyle(document.getElementById("drawer")).visibility === "hidden"`},
		{"drawer button shown", `document.getElementById("drawer-toggle").getBoundingClientRect().width > 0`},
	} {
		if !evalJS[bool](p, c.js) {
			t.Errorf("%s: %s is false", c.name, c.js)
		}
	}

	const open = drawerOpenJS
	const closed = `document.getElementById("drawer").getBoundingClientRect().right <= 0 && getComputedStyle(document.getElementById("drawer")).visibility === "hidden"`
	p.run("open the drawer",
		chromedp.Click(chromedp.ID("drawer-toggle")),
		pollJS(open),
		pollJS(`document.getElementById("drawer-toggle").getAttribute("aria-expanded") === "true"`),
	)
	p.run("tap outside closes it",
		chromedp.MouseClickXY(375, 600),
		pollJS(closed),
	)
	p.run("open it again, pick the session",
		chromedp.Click(chromedp.ID("drawer-toggle")),
		pollJS(open),
		chromedp.Click(chromedp.CSS("#sessions li")),
		pollJS(closed),
		pollJS(`document.getElementById("conn").textContent === "live" && document.querySelector("#transcript .msg.assistant pre") !== null`),
	)
	if !evalJS[bool](p, noPageScroll) {
		t.Errorf("the page scrolls sideways: scrollWidth %d", evalJS[int](p, `document.scrollingElement.scrollWidth`))
	}

	shot, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	p.run("sign out from the drawer",
		chromedp.Click(chromedp.ID("drawer-toggle")),
		pollJS(open),
		chromedp.Click(chromedp.ID("signout")),
		chromedp.WaitVisible(chromedp.ID("token")),
	)
	if !evalJS[bool](p, noPageScroll+` && document.querySelector(".signin").getBoundingClientRect().right <= 390`) {
		t.Errorf("the sign-in card is wider than the screen: scrollWidth %d", evalJS[int](p, `document.scrollingElement.scrollWidth`))
	}
	path := filepath.Join(artifactsDir(t), "webpage-narrow.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// BenchmarkWebPageMarkdown measures md.js in Chromium on a ~40 KB (~10k
// token) answer: one full mdRender, and mdUpdate as the answer streams in
// 16-byte pieces (what the page does per animation frame). Reported as
// ms/full-render and ms/stream-update (the mean of the last 200 updates).
func BenchmarkWebPageMarkdown(b *testing.B) {
	chrome := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			chrome = p
			break
		}
	}
	if chrome == "" {
		b.Skip("no Chromium")
	}
	srv := httptest.NewServer(webHandler())
	defer srv.Close()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(b.TempDir()))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer acancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), pollJS(`typeof mdRender === "function"`)); err != nil {
		b.Fatal(err)
	}
	unit, err := json.Marshal("## Heading\n\nSome **bold** and *em* text with `code` and a [link](https://example.com).\n\n```go\nfunc f() int { return 1 }\n```\n\n- a\n- b\n  - c\n\n| x | y |\n|---|---|\n| 1 | 2 |\n\n")
	if err != nil {
		b.Fatal(err)
	}
	js := `(() => {
		const unit = ` + string(unit) + `, src = unit.repeat(Math.ceil(40000 / unit.length));
		let t0 = performance.now();
		document.createElement("div").append(mdRender(src));
		const full = performance.now() - t0;
		const d = document.createElement("div");
		let last = 0;
		for (let i = 16; i < src.length + 16; i += 16) {
			if (i >= src.length - 200 * 16) { if (!last) last = performance.now(); }
			mdUpdate(d, src.slice(0, Math.min(i, src.length)));
		}
		return [full, (performance.now() - last) / 200];
	})()`
	var full, update float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](js))
		if err != nil {
			b.Fatal(err)
		}
		full += v[0]
		update += v[1]
	}
	b.ReportMetric(full/float64(b.N), "ms/full-render")
	b.ReportMetric(update/float64(b.N), "ms/stream-update")
}
