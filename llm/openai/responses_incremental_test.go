package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/talaria-agent/talaria/internal/testing/wiretest"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/internal/toolcache"
)

// rsSessionMessage is sessionMessage with Responses replay state: the
// assistant messages carry encrypted reasoning items of this format (some
// of another model, which must never be sent), and now and then a
// compaction checkpoint, which moves the start of the input.
func rsSessionMessage(i int) llm.Message {
	m := sessionMessage(i)
	if m.Role != llm.RoleAssistant {
		return m
	}
	items := []json.RawMessage{json.RawMessage(fmt.Sprintf(`{"type":"reasoning", "id":"rs_%d","encrypted_content":"e<%d>"}`, i, i))}
	if i%50 == 25 {
		items = append(items, json.RawMessage(fmt.Sprintf(`{"type":"compaction","encrypted_content":"cp%d"}`, i)))
	}
	model := "m"
	if i%5 == 4 {
		model = "other"
	}
	m.Reasoning = &llm.Reasoning{API: ResponsesAPI, Model: model, Items: items}
	return m
}

// TestResponsesIncrementalBytesMatchFullEncoding is the Chat Completions
// test for the Responses body: a session run call by call, rows appended
// (several calls in one turn, between user messages), the newest message
// different on every call, the tool list changing, and replay and
// compaction on and off; every body must be encodeResponsesRequest's.
func TestResponsesIncrementalBytesMatchFullEncoding(t *testing.T) {
	for _, o := range []responsesOptions{
		{replay: true, effort: "high", summary: "auto"},
		{replay: true, compact: true, threshold: 9000},
		{replay: false},
	} {
		for _, system := range []string{"", "You are <careful>."} {
			t.Run(fmt.Sprintf("replay=%t/compact=%t/system=%t", o.replay, o.compact, system != ""), func(t *testing.T) {
				var cache llm.WireCache
				calls := wiretest.Calls{Cache: &cache}
				var tc toolcache.Cache
				var msgs []llm.Message
				tools := []llm.ToolSpec{{Name: "read_file", Description: "Reads <a> file.", Parameters: []byte(`{"type":"object"}`)}, {Name: "noop"}}
				rnd := rand.New(rand.NewPCG(1, 2)) // any run of appends, the same every time
				for call := range 200 {
					stable := len(msgs)
					for range rnd.IntN(4) {
						msgs = append(msgs, rsSessionMessage(len(msgs)))
					}
					// The newest message differs on every call: it must
					// never be taken from the cache. An assistant one
					// sometimes, so that replay after the last user
					// message reaches the end.
					tail := llm.NewText(llm.RoleUser, fmt.Sprint("pending ", call))
					if rnd.IntN(3) == 1 {
						tail = rsSessionMessage(1)
						tail.ToolCalls[0].ID = fmt.Sprint("pending", call)
					}
					req := &llm.Request{Model: "m", System: system, Messages: append(msgs[:len(msgs):len(msgs)], tail), Tools: tools,
						MaxTokens: 100, Stable: stable, Wire: &cache}
					switch call % 11 {
					case 4:
						req.Tools = nil
					case 7:
						req.Tools = slices.Clone(tools)
						req.Tools[0].Description = fmt.Sprint("changed ", call)
					case 9:
						req.Tools = append(slices.Clone(tools), llm.ToolSpec{Name: "new", Parameters: []byte(`{ "type" : "object" }`)})
					}
					if call%7 == 3 {
						req.Stable = stable / 2
					}
					want, err := encodeResponsesRequest(req, o)
					if err != nil {
						t.Fatal(err)
					}
					got, key, err := encodeResponsesIncremental(req, o, &tc)
					if err != nil {
						t.Fatal(err)
					}
					calls.Check(t, call, got, want, key)
				}
				if calls.InPlace == 0 {
					t.Error("no call appended in place")
				}
			})
		}
	}
}

// TestResponsesIncrementalReplayCut checks the case the cut exists for:
// within one turn (no new user message) the assistant messages after the
// last user message carry their reasoning; once a new user message comes,
// they must lose it, though they were in the stable prefix of the call
// before. A cache cut after the last user message would resend it.
func TestResponsesIncrementalReplayCut(t *testing.T) {
	o := responsesOptions{replay: true}
	var cache llm.WireCache
	calls := wiretest.Calls{Cache: &cache}
	var tc toolcache.Cache
	msgs := []llm.Message{llm.NewText(llm.RoleUser, "go"), rsSessionMessage(1), rsSessionMessage(2), rsSessionMessage(3)}
	for call, add := range []llm.Message{rsSessionMessage(4), llm.NewText(llm.RoleUser, "next"), rsSessionMessage(7)} {
		stable := len(msgs)
		msgs = append(msgs, add)
		req := &llm.Request{Model: "m", Messages: msgs, Stable: stable, Wire: &cache}
		want, err := encodeResponsesRequest(req, o)
		if err != nil {
			t.Fatal(err)
		}
		got, key, err := encodeResponsesIncremental(req, o, &tc)
		if err != nil {
			t.Fatal(err)
		}
		calls.Check(t, call, got, want, key)
		if n := bytes.Count(got, []byte(`"rs_1"`)); n != map[int]int{0: 1, 1: 0, 2: 0}[call] {
			t.Fatalf("call %d: reasoning of the first turn sent %d times: %s", call, n, got)
		}
	}
}
