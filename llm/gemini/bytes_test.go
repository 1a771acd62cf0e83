package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/talaria-agent/talaria/internal/testing/wiretest"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/internal/toolcache"
)

// recorder is a real HTTP server standing in for the Gemini API: it keeps
// the last request (method, URL, headers, body) and answers with a short
// finished stream.
type recorder struct {
	srv  *httptest.Server
	mu   sync.Mutex
	last *http.Request
	body []byte
}

func newRecorder(t testing.TB) *recorder {
	rec := &recorder{}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.last, rec.body = r, body
		rec.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"candidates":[{"content":{"parts":[{"text":"ok"}],"role":"model"},"finishReason":"STOP"}],"responseId":"r1"}`+"\n\n")
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

// taken returns the last request's method and URL, headers and body.
func (rec *recorder) taken() (string, http.Header, []byte) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.last == nil {
		return "", nil, nil
	}
	return rec.last.Method + " " + rec.last.URL.String(), rec.last.Header.Clone(), rec.body
}

// sdkClient is a genai client configured as New configures the provider's.
func sdkClient(t testing.TB, base string) *genai.Client {
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: "k", Backend: genai.BackendGeminiAPI, HTTPClient: &http.Client{},
		HTTPOptions: genai.HTTPOptions{BaseURL: base + "/", APIVersion: "v1beta", Headers: http.Header{"X-Extra": {"1"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sdkBody sends req the way the adapter did before it encoded its own
// bodies (sdkBuildRequest through the SDK) and returns what reached the
// server.
func sdkBody(t testing.TB, c *genai.Client, rec *recorder, req *llm.Request, budget int) (string, http.Header, []byte) {
	t.Helper()
	contents, config, err := sdkBuildRequest(req, budget)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range c.Models.GenerateContentStream(context.Background(), req.Model, contents, config) {
		if err != nil {
			t.Fatalf("SDK call: %v", err)
		}
	}
	return rec.taken()
}

// Strings and arguments with what encodings disagree on: HTML characters
// (the SDK escapes them), invalid UTF-8, line and paragraph separators,
// control characters, quotes, non-ASCII, numbers a float64 prints another
// way, duplicate keys, JSON that is not an object or not JSON.
var (
	texts = []string{"hi", "<b>fix</b> & \"quoted\" 'x'", "ünïcödé ✓ 😀", "line\nbreak\ttab \\ back\r", "sep\u2028par\u2029",
		"bad \xff\xfe utf8 \xc3", "\x00\x01\x1f ctrl \x7f", "", "   ", "</script><!--", strings.Repeat("long text ", 40), "a\u00a0b\ufeffc"}
	argsPool = []string{`{"path":"a.go"}`, `{"n":1.5,"big":12345678901234567890,"neg":-0.0,"exp":1e-7,"e21":1e21,"int":100000000000000000000000,"arr":[1,"<x>",null,true,2.50],"obj":{"z":1,"a":{"b":2}}}`,
		``, `not json`, `null`, `[]`, `[1,2]`, `"str"`, "{\"k\":\"bad \xff\"}", `{"dup":1,"dup":2}`, `{"html":"<&>","u":"\u2028","esc":"\u003c"}`, ` { "spaced" : 1 } `, `{}`, `{"":""}`}
	schemas = []string{`{"type":"object","properties":{"path":{"type":"string","description":"A <path> & more"}}}`, ``, `null`, `  `,
		`{"type":"object","properties":{"n":{"type":"number","minimum":1.0,"maximum":1e21,"default":0.1}},"required":["n"]}`,
		`{"z":1,"a":[{"y":2,"b":3}],"m":"\u2028"}`, `[1,2]`, "{\"bad\":\"\xff\"}", `{"type":"object","properties":{}}`}
	temps = []float64{0, 0.7, 0.1, 1e-7, 2, 1.0 / 3, 0.95, 1e21}
)

// genMessage is a random message of a Gemini session: every role and part
// kind, signatures issued for this model, another model and another
// format, tool results with and without their tool name, for known and
// unknown calls.
func genMessage(r *rand.Rand, i int, calls *[]llm.ToolCall) llm.Message {
	text := func() string { return texts[r.IntN(len(texts))] }
	switch r.IntN(10) {
	case 0, 1:
		return llm.NewText(llm.RoleUser, text())
	case 2:
		m := llm.Message{Role: llm.RoleUser}
		for range r.IntN(3) + 1 {
			switch r.IntN(4) {
			case 0:
				m.Content = append(m.Content, llm.TextPart(text()))
			case 1:
				m.Content = append(m.Content, llm.Part{Type: llm.PartImage, MediaType: []string{"", "image/jpeg", "image/<x>"}[r.IntN(3)], Data: []byte{0x89, 'P', byte(i), 0xff}})
			case 2:
				m.Content = append(m.Content, llm.Part{Type: llm.PartImage, URL: []string{"https://x/a.png?a=1&b=<2>", "", "gs://b/\xff"}[r.IntN(3)]})
			default:
				m.Content = append(m.Content, llm.Part{Type: llm.PartImage})
			}
		}
		return m
	case 3, 4:
		m := llm.NewText(llm.RoleAssistant, []string{"", text()}[r.IntN(2)])
		*calls = (*calls)[:0]
		for k := range r.IntN(4) {
			c := llm.ToolCall{ID: fmt.Sprintf("c%d_%d", i, k), Name: []string{"read_file", "run <cmd>", "bad\xffname"}[r.IntN(3)], Arguments: argsPool[r.IntN(len(argsPool))]}
			m.ToolCalls = append(m.ToolCalls, c)
			*calls = append(*calls, c)
		}
		switch r.IntN(5) {
		case 0:
			var items []json.RawMessage
			for range r.IntN(4) {
				items = append(items, json.RawMessage([]string{
					fmt.Sprintf(`{"on":"call","index":%d,"thought_signature":"c2lnbmF0dXJl"}`, r.IntN(5)),
					`{"on":"text","index":0,"thought_signature":"dGV4dA=="}`,
					`{"on":"call","index":0,"thought_signature":null}`,
					`{"on":"call","index":0,"thought_signature":""}`,
					`not json`,
				}[r.IntN(5)]))
			}
			m.Reasoning = &llm.Reasoning{API: API, Model: []string{"", "gemini-3-pro", "gemini-other"}[r.IntN(3)], Text: "thinking", Items: items}
		case 1:
			m.Reasoning = &llm.Reasoning{API: "anthropic", Text: "t", Signature: "s"}
		}
		return m
	case 5, 6, 7:
		c := llm.ToolCall{ID: "unknown", Name: "noop"}
		if len(*calls) > 0 && r.IntN(5) > 0 {
			c = (*calls)[r.IntN(len(*calls))]
		}
		m := llm.NewToolResult(c, text(), r.IntN(4) == 0)
		if r.IntN(3) == 0 {
			m.ToolName = "" // found by its call id, or not at all
		}
		return m
	case 8:
		return llm.NewText(llm.RoleSystem, text())
	default:
		return llm.Message{Role: llm.RoleAssistant}
	}
}

// genRequest is a random request of up to n messages with random options.
func genRequest(r *rand.Rand, n int) (*llm.Request, int) {
	req := &llm.Request{Model: "gemini-3-pro"}
	var calls []llm.ToolCall
	for i := range r.IntN(n + 1) {
		req.Messages = append(req.Messages, genMessage(r, i, &calls))
	}
	if r.IntN(2) == 0 {
		req.System = texts[r.IntN(len(texts))]
	}
	if r.IntN(2) == 0 {
		req.MaxTokens = []int{1, 300, 8192, 1 << 40}[r.IntN(4)]
	}
	if r.IntN(2) == 0 {
		t := temps[r.IntN(len(temps))]
		req.Temperature = &t
	}
	for k := range r.IntN(4) {
		req.Tools = append(req.Tools, llm.ToolSpec{Name: fmt.Sprintf("tool_%d<%d>", k, r.IntN(3)), Description: texts[r.IntN(len(texts))], Parameters: []byte(schemas[r.IntN(len(schemas))])})
	}
	return req, []int{0, 0, 1024, 24576}[r.IntN(4)]
}

// TestBodyMatchesSDK: for every kind of transcript the adapter's body is
// byte for byte what the genai SDK sent for the same request, and the
// whole HTTP request (method, URL with version and model, API key, user
// agent and client headers, extra headers, content type) is the same.
func TestBodyMatchesSDK(t *testing.T) {
	rec := newRecorder(t)
	c := sdkClient(t, rec.srv.URL)
	p, err := New(Config{BaseURL: rec.srv.URL, APIKey: "k", Headers: map[string]string{"X-Extra": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	var calls []llm.ToolCall
	r := rand.New(rand.NewPCG(7, 8))
	named := []struct {
		name string
		req  *llm.Request
	}{
		{"one user message", &llm.Request{Model: "gemini-2.5-flash", Messages: []llm.Message{llm.NewText(llm.RoleUser, "hi")}}},
		{"no messages", &llm.Request{Model: "m", System: "sys"}},
		{"only empty messages", &llm.Request{Model: "m", Messages: []llm.Message{llm.NewText(llm.RoleUser, ""), {Role: llm.RoleAssistant}}}},
		{"tool loop", &llm.Request{Model: "gemini-3-pro", System: "be <brief>", MaxTokens: 300, Messages: []llm.Message{
			llm.NewText(llm.RoleUser, "go"), genMessage(rand.New(rand.NewPCG(3, 4)), 1, &calls)}}},
	}
	for _, tc := range named {
		t.Run(tc.name, func(t *testing.T) { checkAgainstSDK(t, p, c, rec, tc.req, 0) })
	}
	for i := range 300 {
		req, budget := genRequest(r, 12)
		t.Run(fmt.Sprint("random ", i), func(t *testing.T) { checkAgainstSDK(t, p, c, rec, req, budget) })
	}
}

// checkAgainstSDK compares the provider's request for req (full and
// incremental encoders, through Stream) with the SDK's.
func checkAgainstSDK(t *testing.T, p *Provider, c *genai.Client, rec *recorder, req *llm.Request, budget int) {
	t.Helper()
	p.budget = budget
	wantLine, wantHeader, want := sdkBody(t, c, rec, req, budget)
	got, err := encodeRequest(req, budget, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("bytes differ from the SDK's\n got  %q\n want %q", got, want)
	}
	for _, wire := range []*llm.WireCache{nil, {}} {
		sent := *req
		sent.Wire, sent.Stable = wire, len(req.Messages)
		if _, err := llm.Collect(p.Stream(context.Background(), &sent), nil); err != nil {
			t.Fatal(err)
		}
		line, header, body := rec.taken()
		if line != wantLine || !bytes.Equal(body, want) {
			t.Fatalf("request %s differs from the SDK's %s\n got  %q\n want %q", line, wantLine, body, want)
		}
		for k := range wantHeader {
			if header.Get(k) != wantHeader.Get(k) {
				t.Errorf("header %s = %q, the SDK sends %q", k, header.Get(k), wantHeader.Get(k))
			}
		}
		if len(header) != len(wantHeader) {
			t.Errorf("headers %v, the SDK sends %v", header, wantHeader)
		}
	}
}

// FuzzBodyMatchesSDK generates transcripts from the fuzzer's seed and
// compares the adapter's body with the SDK's.
func FuzzBodyMatchesSDK(f *testing.F) {
	for i := range 8 {
		f.Add(uint64(i), uint64(i*31+1), uint8(10+i*5))
	}
	rec := newRecorder(f)
	c := sdkClient(f, rec.srv.URL)
	f.Fuzz(func(t *testing.T, s1, s2 uint64, n uint8) {
		req, budget := genRequest(rand.New(rand.NewPCG(s1, s2)), int(n))
		_, _, want := sdkBody(t, c, rec, req, budget)
		got, err := encodeRequest(req, budget, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("bytes differ from the SDK's\n got  %q\n want %q", got, want)
		}
	})
}

// TestIncrementalBytesMatchFullEncoding runs sessions call by call, rows
// appended between calls, the newest message different on every call,
// the stable prefix sometimes shorter: every body must be encodeRequest's
// (and, every tenth call, the SDK's), and the cache must be used.
func TestIncrementalBytesMatchFullEncoding(t *testing.T) {
	rec := newRecorder(t)
	c := sdkClient(t, rec.srv.URL)
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 99))
			base, budget := genRequest(r, 0)
			var cache llm.WireCache
			var tc toolcache.Cache
			calls := wiretest.Calls{Cache: &cache}
			var msgs []llm.Message
			var pending []llm.ToolCall
			reused := 0
			for call := range 300 {
				stable := len(msgs)
				for range r.IntN(4) {
					msgs = append(msgs, genMessage(r, len(msgs), &pending))
				}
				tail := genMessage(r, 1000+call, &[]llm.ToolCall{})
				req := *base
				req.Messages, req.Stable, req.Wire = append(msgs[:len(msgs):len(msgs)], tail), stable, &cache
				if call%7 == 3 {
					req.Stable = stable / 2
				}
				want, err := encodeRequest(&req, budget, nil)
				if err != nil {
					t.Fatal(err)
				}
				got, key, err := encodeIncremental(&req, budget, &tc)
				if err != nil {
					t.Fatal(err)
				}
				calls.Check(t, call, got, want, key)
				if key != "" {
					reused++
				}
				if call%10 == 0 {
					if _, _, sdk := sdkBody(t, c, rec, &req, budget); !bytes.Equal(want, sdk) {
						t.Fatalf("call %d: bytes differ from the SDK's\n got  %q\n want %q", call, want, sdk)
					}
				}
			}
			if calls.InPlace == 0 || reused < 200 {
				t.Errorf("cache used on %d calls, in place on %d", reused, calls.InPlace)
			}
		})
	}
}

// FuzzStringsMatchSDK puts arbitrary bytes everywhere a request carries a
// string or raw JSON (texts, names, call arguments, tool schemas, image
// types and URLs) and compares the adapter's body with the SDK's.
func FuzzStringsMatchSDK(f *testing.F) {
	for _, s := range texts {
		f.Add(s, argsPool[len(s)%len(argsPool)], schemas[len(s)%len(schemas)])
	}
	rec := newRecorder(f)
	c := sdkClient(f, rec.srv.URL)
	f.Fuzz(func(t *testing.T, text, args, schema string) {
		call := llm.ToolCall{ID: "c1", Name: text, Arguments: args}
		asst := llm.NewText(llm.RoleAssistant, text)
		asst.ToolCalls = []llm.ToolCall{call, {ID: "c2", Name: "x", Arguments: text}}
		user := llm.NewText(llm.RoleUser, text)
		user.Content = append(user.Content, llm.Part{Type: llm.PartImage, MediaType: text, Data: []byte(args)}, llm.Part{Type: llm.PartImage, URL: text})
		req := &llm.Request{Model: "gemini-3-pro", System: text, Messages: []llm.Message{
			user, asst, llm.NewToolResult(call, text, false), llm.NewText(llm.RoleSystem, args),
		}, Tools: []llm.ToolSpec{{Name: text, Description: args, Parameters: []byte(schema)}}}
		if _, _, err := sdkBuildRequest(req, 1024); err != nil {
			if _, err := encodeRequest(req, 1024, nil); err == nil {
				t.Fatal("the SDK path refused the request, the adapter did not")
			}
			req.Tools[0].Parameters = nil // and compare the rest
		}
		_, _, want := sdkBody(t, c, rec, req, 1024)
		got, err := encodeRequest(req, 1024, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("bytes differ from the SDK's\n got  %q\n want %q", got, want)
		}
	})
}

// TestStreamSessionSendsSDKBytes runs a growing session through the
// provider with one wire cache, as the turn does (bodies released once
// written, then appended to in place): every request the server gets is
// the SDK's for the same messages.
func TestStreamSessionSendsSDKBytes(t *testing.T) {
	rec := newRecorder(t)
	c := sdkClient(t, rec.srv.URL)
	p, err := New(Config{BaseURL: rec.srv.URL, APIKey: "k", Headers: map[string]string{"X-Extra": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(11, 12))
	base, budget := genRequest(r, 0)
	p.budget = budget
	var cache llm.WireCache
	var msgs []llm.Message
	var pending []llm.ToolCall
	for call := range 40 {
		stable := len(msgs)
		for range r.IntN(5) + 1 {
			msgs = append(msgs, genMessage(r, len(msgs), &pending))
		}
		req := *base
		req.Messages, req.Stable, req.Wire = msgs[:len(msgs):len(msgs)], stable, &cache
		if _, err := llm.Collect(p.Stream(context.Background(), &req), nil); err != nil {
			t.Fatal(err)
		}
		_, _, got := rec.taken()
		got = bytes.Clone(got)
		if _, _, want := sdkBody(t, c, rec, &req, budget); !bytes.Equal(got, want) {
			t.Fatalf("call %d: the server got other bytes than the SDK sends\n got  %q\n want %q", call, got, want)
		}
	}
}
