package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/telemetrytest"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
)

// servingProc is `talaria serve` running in-process.
type servingProc struct {
	cancel context.CancelFunc
	done   chan int
	stdout *testenv.Buffer
	stderr *testenv.Buffer
	url    string
}

var servingOn = regexp.MustCompile(`serving on (\S+)`)

func (e *cliEnv) serve(extra ...string) *servingProc {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &servingProc{cancel: cancel, done: make(chan int, 1), stdout: &testenv.Buffer{}, stderr: &testenv.Buffer{}}
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--drain", "2s"}, e.routeArgs("openai")...)
	args = append(args, extra...)
	go func() { p.done <- run(ctx, args, strings.NewReader(""), p.stdout, p.stderr, e.getenv) }()
	if !testenv.Eventually(10*time.Second, func() bool { return servingOn.MatchString(p.stderr.String()) }) {
		cancel()
		e.t.Fatalf("serve did not start: %s", p.stderr.String())
	}
	p.url = servingOn.FindStringSubmatch(p.stderr.String())[1]
	e.t.Cleanup(func() { p.stop(e.t) })
	return p
}

func (p *servingProc) stop(t *testing.T) int {
	p.cancel()
	select {
	case code := <-p.done:
		p.done <- code
		return code
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
		return -1
	}
}

func call(t *testing.T, client *http.Client, method, url, token, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// TestServeCommand: the first start prints a token and the page URL; the
// token drives a real turn; token create/list/revoke work on the same
// database; cancelling stops the server with exit 0.
func TestServeCommand(t *testing.T) {
	e := newCLIEnv(t)
	e.srv.SetDefault(func(fakellm.Request) fakellm.Step { return fakellm.Text("served answer") })
	p := e.serve()
	out := p.stdout.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "tal_") || lines[2] != "web page: "+p.url {
		t.Fatalf("first start printed %q", out)
	}
	token := lines[1]
	c := http.DefaultClient
	code, s := call(t, c, "POST", p.url+"v1/sessions", token, `{}`)
	if code != 201 {
		t.Fatalf("create = %d %v", code, s)
	}
	sid := s["id"].(string)
	if code, _ := call(t, c, "POST", p.url+"v1/sessions/"+sid+"/messages", token, `{"text":"hi"}`); code != 202 {
		t.Fatalf("post = %d", code)
	}
	if !testenv.Eventually(10*time.Second, func() bool {
		_, m := call(t, c, "GET", p.url+"v1/sessions/"+sid+"/messages", token, "")
		msgs, _ := m["messages"].([]any)
		return len(msgs) == 2 && msgs[1].(map[string]any)["text"] == "served answer"
	}) {
		t.Fatal("the turn did not complete")
	}

	// Tokens from the CLI, on the same database.
	r := e.run("", "serve", "token", "create", "ci-bot", "--principal", "robots")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "tal_") || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("token create = %+v", r)
	}
	bot := strings.TrimSpace(r.stdout)
	if code, _ := call(t, c, "GET", p.url+"v1/sessions/"+sid, bot, ""); code != 404 {
		t.Fatalf("another principal's token saw the session: %d", code)
	}
	r = e.run("", "serve", "token", "list", "--json")
	var list []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 2 || list[1]["principal"] != "robots" {
		t.Fatalf("token list = %+v (%v)", r, err)
	}
	if strings.Contains(r.stdout, bot) || strings.Contains(r.stdout, token) {
		t.Fatal("token list shows a secret")
	}
	if r = e.run("", "serve", "token", "revoke", "ci-bot"); r.code != 0 {
		t.Fatalf("revoke = %+v", r)
	}
	if code, out := call(t, c, "GET", p.url+"v1/sessions", bot, ""); code != 401 {
		t.Fatalf("revoked token = %d %v", code, out)
	}
	if code := p.stop(t); code != 0 || !strings.Contains(p.stderr.String(), "stopped") {
		t.Fatalf("serve exit = %d, stderr %s", code, p.stderr.String())
	}
	// A second start prints no token.
	p2 := e.serve()
	if strings.Contains(p2.stdout.String(), "tal_") {
		t.Fatalf("second start printed a token: %q", p2.stdout.String())
	}
}

// TestServeMetrics: serve's /metrics and its OTLP export read the same
// instruments, and each turn is recorded once: with no telemetry
// configured /metrics alone, with OTEL_EXPORTER_OTLP_ENDPOINT both, with
// the same values.
func TestServeMetrics(t *testing.T) {
	for _, export := range []bool{false, true} {
		t.Run(map[bool]string{false: "metrics only", true: "with OTLP export"}[export], func(t *testing.T) {
			e := newCLIEnv(t)
			var r *telemetrytest.Receiver
			if export {
				r = telemetrytest.NewReceiver(t)
				e.env["OTEL_EXPORTER_OTLP_ENDPOINT"] = r.URL
			}
			e.srv.SetDefault(func(fakellm.Request) fakellm.Step { return fakellm.Text("served answer").WithUsage(100, 7) })
			p := e.serve()
			token := strings.Split(strings.TrimSpace(p.stdout.String()), "\n")[1]
			c := http.DefaultClient
			_, s := call(t, c, "POST", p.url+"v1/sessions", token, `{}`)
			sid, _ := s["id"].(string)
			if code, _ := call(t, c, "POST", p.url+"v1/sessions/"+sid+"/messages", token, `{"text":"hi"}`); code != 202 {
				t.Fatalf("post = %d", code)
			}
			var scrape telemetrytest.Scrape
			if !testenv.Eventually(10*time.Second, func() bool {
				req, _ := http.NewRequest("GET", p.url+"metrics", nil)
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := c.Do(req)
				if err != nil {
					return false
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				scrape = telemetrytest.ParseProm(t, string(b))
				n, _, _ := scrape.Value("talaria_turns_total", map[string]string{"talaria_exit": "completed"})
				return n > 0
			}) {
				t.Fatal("/metrics never counted the turn")
			}
			want := map[string]float64{"talaria_turns_total": 1, "gen_ai_client_token_usage": 107}
			for name, w := range want {
				if got, _, _ := scrape.Value(name, nil); got != w {
					t.Errorf("/metrics %s = %v, want %v (recorded once)", name, got, w)
				}
			}
			if !export {
				return
			}
			if code := p.stop(t); code != 0 {
				t.Fatalf("serve exit = %d", code)
			}
			// Stopping flushed the final cumulative values to the collector.
			ms := r.Metrics()
			for name, w := range map[string]float64{"talaria.turns": want["talaria_turns_total"], "gen_ai.client.token.usage": want["gen_ai_client_token_usage"]} {
				if got, _, _ := telemetrytest.MetricValue(ms, name, nil); got != w {
					t.Errorf("OTLP %s = %v, want %v as on /metrics", name, got, w)
				}
			}
			if _, n, _ := telemetrytest.MetricValue(ms, "http.server.request.duration", map[string]string{"http.route": "POST /v1/sessions/{id}/messages"}); n != 1 {
				t.Errorf("OTLP lacks the gateway's own instruments: %d message posts", n)
			}
		})
	}
}

// TestServeTLSAndWarning: --tls-cert/--tls-key serve HTTPS; listening on
// a non-loopback address without TLS warns.
func TestServeTLSAndWarning(t *testing.T) {
	e := newCLIEnv(t)
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeSelfSigned(t, cert, key)
	p := e.serve("--tls-cert", cert, "--tls-key", key)
	if !strings.HasPrefix(p.url, "https://") {
		t.Fatalf("url = %s", p.url)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if code, _ := call(t, client, "GET", p.url+"healthz", "", ""); code != 200 {
		t.Fatalf("healthz over TLS = %d", code)
	}
	if strings.Contains(p.stderr.String(), "WARNING") {
		t.Fatalf("TLS serve warned: %s", p.stderr.String())
	}
	p.stop(t)

	e2 := newCLIEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	var stderr testenv.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--addr", "0.0.0.0:0"}, e2.routeArgs("openai")...), strings.NewReader(""), &testenv.Buffer{}, &stderr, e2.getenv)
	}()
	ok := testenv.Eventually(10*time.Second, func() bool { return strings.Contains(stderr.String(), "serving on") })
	cancel()
	<-done
	if !ok || !strings.Contains(stderr.String(), "WARNING: listening on") {
		t.Fatalf("no warning for a non-loopback address: %s", stderr.String())
	}
}

func writeSelfSigned(t *testing.T, certPath, keyPath string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(k)
	_ = os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	_ = os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
}

// TestRunAndChatServer: `run --server` and `chat --server` print the same
// answer and exit with the same codes as local runs.
func TestRunAndChatServer(t *testing.T) {
	e := newCLIEnv(t)
	p := e.serve()
	e.env["TALARIA_TOKEN"] = strings.Split(strings.TrimSpace(p.stdout.String()), "\n")[1]
	answer := []fakellm.Step{
		fakellm.Calls(fakellm.ToolCall("list_dir", `{"path":"."}`)),
		fakellm.Calls(fakellm.ToolCall("write_file", `{"path":"x.txt","content":"x"}`)),
		fakellm.Text("all done"),
	}
	rejected := []fakellm.Step{fakellm.HTTPError(400, "invalid_request_error", "Invalid value for 'temperature': must be a number.")}
	cases := []struct {
		name  string
		steps []fakellm.Step
		code  int
	}{{"answer", answer, exitOK}, {"rejected", rejected, exitBadRequest}}
	for _, c := range cases {
		e.srv.Script(c.steps...)
		l := e.run("", append(append([]string{"run"}, e.routeArgs("openai")...), c.name)...)
		e.srv.Script(c.steps...)
		r := e.run("", "run", "--server", p.url, c.name)
		if r.code != l.code || r.stdout != l.stdout || r.code != c.code {
			t.Errorf("%s: remote = %d %q, local = %d %q, want code %d\nremote stderr: %s", c.name, r.code, r.stdout, l.code, l.stdout, c.code, r.stderr)
		}
		if c.name == "answer" && (r.stdout != "all done\n" || !strings.Contains(r.stderr, "write_file")) {
			t.Errorf("remote run = %+v", r)
		}
	}
	// The refused write (no --yes) did not happen in either run.
	if _, err := os.Stat(filepath.Join(e.ws, "x.txt")); err == nil {
		t.Error("write_file ran without --yes")
	}

	e.srv.Script(fakellm.Text("chat answer"))
	r := e.run("hello\n/session\n", "chat", "--server", p.url)
	if r.code != 0 || !strings.Contains(r.stdout, "chat answer") {
		t.Fatalf("chat --server = %+v", r)
	}
	delete(e.env, "TALARIA_TOKEN")
	if r := e.run("", "run", "--server", p.url, "x"); r.code != exitUsage || !strings.Contains(r.stderr, "TALARIA_TOKEN") {
		t.Fatalf("no token = %+v", r)
	}
	e.env["TALARIA_TOKEN"] = "tal_wrong"
	if r := e.run("", "run", "--server", p.url, "x"); r.code != exitAuth {
		t.Fatalf("wrong token = %+v", r)
	}
}

// TestServeConfigTokens: serve.tokens adds tokens whose secrets come from
// the environment; no first-start token is printed then.
func TestServeConfigTokens(t *testing.T) {
	e := newCLIEnv(t)
	cfg := "serve:\n  tokens:\n    - name: ops\n      principal: team\n      env: OPS_TOKEN\n"
	if err := os.WriteFile(filepath.Join(e.home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	e.env["OPS_TOKEN"] = "tal_from_the_environment_0123456789abcdef"
	p := e.serve()
	if strings.Contains(p.stdout.String(), "tal_") {
		t.Fatalf("printed a first token although one is configured: %q", p.stdout.String())
	}
	if code, out := call(t, http.DefaultClient, "GET", p.url+"v1/sessions", "tal_from_the_environment_0123456789abcdef", ""); code != 200 {
		t.Fatalf("configured token = %d %v", code, out)
	}
	p.stop(t)
	delete(e.env, "OPS_TOKEN")
	r := e.run("", append([]string{"serve", "--addr", "127.0.0.1:0"}, e.routeArgs("openai")...)...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "OPS_TOKEN") {
		t.Fatalf("missing secret = %+v", r)
	}
}

// TestServeMCPTools: serve offers the configured MCP servers' tools to its
// sessions, as run does.
func TestServeMCPTools(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "mcptestserver")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/talaria-agent/talaria/internal/testing/mcptest/mcptestserver").CombinedOutput(); err != nil {
		t.Fatalf("build mcptestserver: %v\n%s", err, out)
	}
	e := newCLIEnv(t)
	e.writeConfig("sandbox: {mode: off}\nmcp_servers:\n  test:\n    command: " + bin + "\n    sandbox: {mode: off}\n    env: {MCPTEST_DIR: " + t.TempDir() + "}\n")
	p := e.serve()
	token := strings.Split(strings.TrimSpace(p.stdout.String()), "\n")[1]
	e.env["TALARIA_TOKEN"] = token
	e.srv.Script(fakellm.Calls(fakellm.ToolCall("test__echo", `{"text":"hi"}`)), fakellm.Text("done"))
	r := e.run("", "run", "--server", p.url, "go")
	if r.code != 0 || r.stdout != "done\n" {
		t.Fatalf("run --server = %+v", r)
	}
	if res, _ := toolResult(e.srv.Requests()[1], "test__echo"); res != "echo: hi" {
		t.Fatalf("echo result %q", res)
	}
}

// chat --server creates its server session with the first message, as
// local chat does (opening and leaving creates nothing), and /usage reads
// like local chat's, not raw JSON.
func TestChatServerLazySessionAndUsage(t *testing.T) {
	e := newCLIEnv(t)
	p := e.serve()
	tok := strings.Split(strings.TrimSpace(p.stdout.String()), "\n")[1]
	e.env["TALARIA_TOKEN"] = tok
	count := func() int {
		req, _ := http.NewRequest("GET", p.url+"/v1/sessions", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v struct {
			Sessions []json.RawMessage `json:"sessions"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			t.Fatal(err)
		}
		return len(v.Sessions)
	}
	before := count()
	r := e.run("/usage\n/exit\n", "chat", "--server", p.url)
	if r.code != exitOK || !strings.Contains(r.stdout, "no session yet") {
		t.Fatalf("chat without a message = %+v", r)
	}
	if n := count(); n != before {
		t.Fatalf("%d server sessions after a chat with no message, were %d", n, before)
	}
	e.srv.Script(fakellm.Text("chat answer"))
	r = e.run("hello\n/usage\n", "chat", "--server", p.url)
	if r.code != exitOK || !strings.Contains(r.stdout, "chat answer") {
		t.Fatalf("chat = %+v", r)
	}
	if !strings.Contains(r.stdout, "1 API calls") || !strings.Contains(r.stdout, "tokens: ") || strings.Contains(r.stdout, `"api_calls"`) {
		t.Errorf("/usage is not worded like local chat's:\n%s", r.stdout)
	}
	if n := count(); n != before+1 {
		t.Errorf("%d server sessions after one chat with a message, want %d", n, before+1)
	}
}

// A principal's sandbox mode that is not a mode stops serve at start,
// naming the principal, before it listens.
func TestServePrincipalSandboxInvalid(t *testing.T) {
	e := newCLIEnv(t)
	e.writeConfig("sandbox:\n  mode: off\nserve:\n  limits:\n    principals:\n      eve: {sandbox: readonly}\n")
	args := append([]string{"serve", "--addr", "127.0.0.1:0"}, e.routeArgs("openai")...)
	r := e.run("", args...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "eve") || !strings.Contains(r.stderr, "readonly") {
		t.Fatalf("exit %d, want %d naming eve and the bad mode:\n%s", r.code, exitUsage, r.stderr)
	}
}
