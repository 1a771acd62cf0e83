package fakellm

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// ruleCase is one request body and what strict validation must say: ""
// accepts it, anything else is a piece of the expected 400 message.
type ruleCase struct {
	name    string
	body    string
	wantErr string
}

func anThinkingBody(budget int, messages string) string {
	return `{"model":"claude-test","max_tokens":8192,"thinking":{"type":"enabled","budget_tokens":` + strconv.Itoa(budget) + `},"messages":` + messages + `}`
}

func oaBodyOf(messages string) string {
	return `{"model":"gpt-test","messages":` + messages + `}`
}

func anBodyOf(messages string) string {
	return `{"model":"claude-test","max_tokens":100,"messages":` + messages + `}`
}

const (
	oaAsstCalls = `{"role":"assistant","content":null,"tool_calls":[` +
		`{"id":"c1","type":"function","function":{"name":"read","arguments":"{}"}},` +
		`{"id":"c2","type":"function","function":{"name":"read","arguments":"{}"}}]}`
	oaTool1 = `{"role":"tool","tool_call_id":"c1","content":"one"}`
	oaTool2 = `{"role":"tool","tool_call_id":"c2","content":"two"}`
	oaUser  = `{"role":"user","content":"hi"}`

	anUser     = `{"role":"user","content":"hi"}`
	anAsstUses = `{"role":"assistant","content":[{"type":"text","text":"reading"},` +
		`{"type":"tool_use","id":"t1","name":"read","input":{}},{"type":"tool_use","id":"t2","name":"read","input":{"p":1}}]}`
	anResults = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"one"},` +
		`{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"two"}]}]}`
)

var openaiRules = []ruleCase{
	// accepted
	{"minimal", oaBodyOf(`[` + oaUser + `]`), ""},
	{"system developer and parts", oaBodyOf(`[{"role":"system","content":"s"},{"role":"developer","content":"d"},{"role":"user","content":[{"type":"text","text":"hi"}]}]`), ""},
	{"full tool round", oaBodyOf(`[` + oaUser + `,` + oaAsstCalls + `,` + oaTool2 + `,` + oaTool1 + `,{"role":"assistant","content":"done"},` + oaUser + `]`), ""},
	{"assistant with empty content and calls", oaBodyOf(`[` + oaUser + `,{"role":"assistant","content":"","tool_calls":[{"id":"c9","type":"function","function":{"name":"x","arguments":""}}]},{"role":"tool","tool_call_id":"c9","content":"r"}]`), ""},
	{"two rounds with distinct ids", oaBodyOf(`[` + oaUser + `,` + oaAsstCalls + `,` + oaTool1 + `,` + oaTool2 + `,{"role":"assistant","tool_calls":[{"id":"c3","type":"function","function":{"name":"x","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c3","content":"r"}]`), ""},
	// rejected
	{"malformed JSON", `{"model":"gpt-test","messages":[`, "We could not parse the JSON body"},
	{"not UTF-8", oaBodyOf(`[{"role":"user","content":"bad ` + "\xff\xfe" + `"}]`), "We could not parse the JSON body"},
	{"missing model", `{"messages":[` + oaUser + `]}`, "you must provide a model parameter"},
	{"missing messages", `{"model":"gpt-test"}`, "Missing required parameter: 'messages'."},
	{"empty messages", oaBodyOf(`[]`), "Invalid 'messages': empty array"},
	{"messages not a list", oaBodyOf(`"hi"`), "Invalid type for 'messages'"},
	{"unknown role", oaBodyOf(`[{"role":"robot","content":"beep"}]`), "Invalid value: 'robot'"},
	{"orphan tool message", oaBodyOf(`[` + oaUser + `,` + oaTool1 + `]`), oaOrphanTool},
	{"tool answers an unknown id", oaBodyOf(`[` + oaUser + `,` + oaAsstCalls + `,` + oaTool1 + `,` + oaTool2 + `,{"role":"tool","tool_call_id":"c7","content":"x"}]`), oaOrphanTool},
	{"tool answers twice", oaBodyOf(`[` + oaUser + `,` + oaAsstCalls + `,` + oaTool1 + `,` + oaTool1 + `,` + oaTool2 + `]`), oaOrphanTool},
	{"tool after a user message", oaBodyOf(`[` + oaUser + `,` + oaAsstCalls + `,` + oaTool1 + `,` + oaTool2 + `,` + oaUser + `,` + oaTool1 + `]`), oaOrphanTool},
	{"tool message without id", oaBodyOf(`[` + oaUser + `,` + oaAsstCalls + `,{"role":"tool","content":"x"}]`), "Missing required parameter: 'messages.[2].tool_call_id'."},
	{"unanswered call before user", oaBodyOf(`[` + oaUser + `,` + oaAsstCalls + `,` + oaTool1 + `,` + oaUser + `]`), "The following tool_call_ids did not have response messages: c2"},
	{"unanswered calls at the end", oaBodyOf(`[` + oaUser + `,` + oaAsstCalls + `]`), "did not have response messages: c1, c2"},
	{"unanswered call before assistant", oaBodyOf(`[` + oaUser + `,` + oaAsstCalls + `,` + oaTool2 + `,{"role":"assistant","content":"x"}]`), "did not have response messages: c1"},
	{"assistant without content or calls", oaBodyOf(`[` + oaUser + `,{"role":"assistant"},` + oaUser + `]`), "Invalid value for 'content': expected a string, got null."},
	{"assistant with empty content", oaBodyOf(`[` + oaUser + `,{"role":"assistant","content":""},` + oaUser + `]`), "expected a string, got null"},
	{"duplicate call ids across messages", oaBodyOf(`[` + oaUser + `,` + oaAsstCalls + `,` + oaTool1 + `,` + oaTool2 + `,` + oaAsstCalls + `,` + oaTool1 + `,` + oaTool2 + `]`), "duplicate tool call id 'c1'"},
	{"duplicate call ids in one message", oaBodyOf(`[` + oaUser + `,{"role":"assistant","tool_calls":[{"id":"d","type":"function","function":{"name":"x","arguments":"{}"}},{"id":"d","type":"function","function":{"name":"x","arguments":"{}"}}]},{"role":"tool","tool_call_id":"d","content":"r"}]`), "duplicate tool call id 'd'"},
}

func rsBodyOf(model, input string) string {
	return `{"model":"` + model + `","input":` + input + `,"store":false,"stream":true}`
}

func rsReasoningItem(model, id, summary, enc string) string {
	if enc == "" {
		enc = rsEncrypted(0, model, id, summary)
	}
	return `{"id":"` + id + `","type":"reasoning","summary":[{"type":"summary_text","text":"` + summary + `"}],"encrypted_content":"` + enc + `"}`
}

const (
	rsUser   = `{"type":"message","role":"user","content":"hi"}`
	rsCallA  = `{"type":"function_call","call_id":"ca","name":"ls","arguments":"{}"}`
	rsOutA   = `{"type":"function_call_output","call_id":"ca","output":"files"}`
	rsAnswer = `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}`
)

var responsesRules = []ruleCase{
	// accepted
	{"string input", rsBodyOf("gpt-5", `"hi"`), ""},
	{"tool round with reasoning", rsBodyOf("gpt-5", `[`+rsUser+`,`+rsReasoningItem("gpt-5", "rs_1", "plan", "")+`,`+rsCallA+`,`+rsOutA+`,`+rsAnswer+`]`), ""},
	// rejected
	{"output without its call", rsBodyOf("gpt-5", `[`+rsUser+`,`+rsOutA+`]`), "No tool call found for function call output with call_id ca."},
	{"call without output", rsBodyOf("gpt-5", `[`+rsUser+`,`+rsCallA+`]`), "No tool output found for function call ca."},
	{"reasoning replayed to another model", rsBodyOf("gpt-5-mini", `[`+rsUser+`,`+rsReasoningItem("gpt-5", "rs_1", "plan", "")+`,`+rsCallA+`,`+rsOutA+`]`), "The encrypted content for item rs_1 could not be verified."},
	{"reasoning with edited summary", rsBodyOf("gpt-5", `[`+rsUser+`,`+rsReasoningItem("gpt-5", "rs_1", "plan!", rsEncrypted(0, "gpt-5", "rs_1", "plan"))+`,`+rsCallA+`,`+rsOutA+`]`), "could not be verified"},
	{"reasoning without encrypted content", rsBodyOf("gpt-5", `[`+rsUser+`,{"id":"rs_2","type":"reasoning","summary":[]},`+rsCallA+`,`+rsOutA+`]`), "Items are not persisted when `store` is set to false"},
	{"reasoning without its following item", rsBodyOf("gpt-5", `[`+rsUser+`,`+rsReasoningItem("gpt-5", "rs_1", "plan", "")+`,`+rsUser+`]`), "Item 'rs_1' of type 'reasoning' was provided without its required following item."},
}

var anthropicRules = []ruleCase{
	// accepted
	{"minimal", anBodyOf(`[` + anUser + `]`), ""},
	{"1h marks before 5m marks", `{"model":"m","max_tokens":5,"system":[{"type":"text","text":"a","cache_control":{"type":"ephemeral","ttl":"1h"}}],"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}`, ""},
	// cache_control as the API checks it (issue 29 item 8)
	{"1h mark after a 5m mark", `{"model":"m","max_tokens":5,"system":[{"type":"text","text":"a","cache_control":{"type":"ephemeral","ttl":"5m"}}],"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral","ttl":"1h"}}]}]}`, "a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block"},
	{"tier that does not exist", `{"model":"m","max_tokens":5,"system":[{"type":"text","text":"a","cache_control":{"type":"ephemeral","ttl":"2h"}}],"messages":[` + anUser + `]}`, "cache_control.ttl: Input should be '5m' or '1h'"},
	{"cache type", `{"model":"m","max_tokens":5,"system":[{"type":"text","text":"a","cache_control":{"type":"persistent"}}],"messages":[` + anUser + `]}`, "cache_control.type"},
	{"five marks", `{"model":"m","max_tokens":5,"system":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"text","text":"b","cache_control":{"type":"ephemeral"}},{"type":"text","text":"c","cache_control":{"type":"ephemeral"}},{"type":"text","text":"d","cache_control":{"type":"ephemeral"}},{"type":"text","text":"e","cache_control":{"type":"ephemeral"}}],"messages":[` + anUser + `]}`, "A maximum of 4 blocks with cache_control may be provided. Found 5."},
	{"system string", `{"model":"m","max_tokens":5,"system":"be brief","messages":[` + anUser + `]}`, ""},
	{"system blocks", `{"model":"m","max_tokens":5,"system":[{"type":"text","text":"a"},{"type":"text","text":"b","cache_control":{"type":"ephemeral"}}],"messages":[` + anUser + `]}`, ""},
	{"full tool round", anBodyOf(`[` + anUser + `,` + anAsstUses + `,` + anResults + `,{"role":"assistant","content":"done"},` + anUser + `]`), ""},
	{"results with text after them", anBodyOf(`[` + anUser + `,` + anAsstUses + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1"},{"type":"tool_result","tool_use_id":"t2","content":"","is_error":true},{"type":"text","text":"go on"}]}]`), ""},
	{"thinking block", anBodyOf(`[` + anUser + `,{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"` + anSignature("msg_a", "hm") + `"},{"type":"text","text":"ok"}]},` + anUser + `]`), ""},
	{"thinking tool loop", anThinkingBody(2048, `[`+anUser+`,{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"`+anSignature("msg_a", "hm")+`"},{"type":"redacted_thinking","data":"`+redactedPrefix+`x"},{"type":"tool_use","id":"t1","name":"read","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"one"}]}]`), ""},
	// rejected
	{"malformed JSON", `{"model":`, "invalid JSON"},
	{"not UTF-8", anBodyOf(`[{"role":"user","content":"bad ` + "\xff" + `"}]`), "not valid UTF-8"},
	{"missing model", `{"max_tokens":5,"messages":[` + anUser + `]}`, "model: Field required"},
	{"missing max_tokens", `{"model":"m","messages":[` + anUser + `]}`, "max_tokens: Field required"},
	{"missing messages", `{"model":"m","max_tokens":5}`, "messages: Field required"},
	{"empty messages", anBodyOf(`[]`), "at least one message"},
	{"first message from assistant", anBodyOf(`[{"role":"assistant","content":"hi"},` + anUser + `]`), `first message must use the "user" role`},
	{"two user messages in a row", anBodyOf(`[` + anUser + `,` + anUser + `]`), `found multiple "user" roles in a row`},
	{"two assistant messages in a row", anBodyOf(`[` + anUser + `,{"role":"assistant","content":"a"},{"role":"assistant","content":"b"}]`), `found multiple "assistant" roles in a row`},
	{"system role in messages", anBodyOf(`[{"role":"system","content":"s"},` + anUser + `]`), `Unexpected role "system"`},
	{"empty string content", anBodyOf(`[{"role":"user","content":""}]`), "messages.0: all messages must have non-empty content"},
	{"empty content list", anBodyOf(`[` + anUser + `,{"role":"assistant","content":[]}]`), "messages.1: all messages must have non-empty content"},
	{"empty text block", anBodyOf(`[{"role":"user","content":[{"type":"text","text":""}]}]`), "messages: text content blocks must be non-empty"},
	{"empty text block in a tool result", anBodyOf(`[` + anUser + `,` + anAsstUses + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":""}]},{"type":"tool_result","tool_use_id":"t2"}]}]`), "text content blocks must be non-empty"},
	{"empty system block", `{"model":"m","max_tokens":5,"system":[{"type":"text","text":""}],"messages":[` + anUser + `]}`, "system: text content blocks must be non-empty"},
	{"orphan tool result", anBodyOf(`[` + anUser + `,{"role":"assistant","content":"no tools"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}]`), "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: t1"},
	{"tool result for an older message", anBodyOf(`[` + anUser + `,` + anAsstUses + `,` + anResults + `,{"role":"assistant","content":"ok"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"again"}]}]`), "messages.4.content.0: unexpected `tool_use_id`"},
	{"tool result answered twice", anBodyOf(`[` + anUser + `,` + anAsstUses + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1"},{"type":"tool_result","tool_use_id":"t1"},{"type":"tool_result","tool_use_id":"t2"}]}]`), "messages.2.content.1: unexpected `tool_use_id`"},
	{"unanswered tool use", anBodyOf(`[` + anUser + `,` + anAsstUses + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1"},{"type":"text","text":"skip t2"}]}]`), "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: t2"},
	{"tool use as the last message", anBodyOf(`[` + anUser + `,` + anAsstUses + `]`), "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: t1, t2"},
	{"duplicate tool use ids", anBodyOf(`[` + anUser + `,` + anAsstUses + `,` + anResults + `,` + anAsstUses + `,` + anResults + `]`), "messages.3.content.1: `tool_use` ids must be unique"},
	{"modified thinking in the latest assistant message", anBodyOf(`[` + anUser + `,{"role":"assistant","content":[{"type":"thinking","thinking":"hm, edited","signature":"` + anSignature("msg_a", "hm") + `"},{"type":"text","text":"ok"}]},` + anUser + `]`), "messages.1.content.0: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified"},
	{"stale signature in an older message", anBodyOf(`[` + anUser + `,{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"text","text":"ok"}]},` + anUser + `,{"role":"assistant","content":"b"},` + anUser + `]`), "messages.1.content.0: Invalid `signature` in `thinking` block"},
	{"unsigned thinking", anBodyOf(`[` + anUser + `,{"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"ok"}]},` + anUser + `]`), "cannot be modified"},
	{"forged redacted thinking", anBodyOf(`[` + anUser + `,{"role":"assistant","content":[{"type":"redacted_thinking","data":"abc"},{"type":"text","text":"ok"}]},` + anUser + `]`), "cannot be modified"},
	{"thinking budget below the minimum", anThinkingBody(500, `[`+anUser+`]`), "budget_tokens: Input should be greater than or equal to 1024"},
	{"thinking budget above max_tokens", `{"model":"m","max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":4000},"messages":[` + anUser + `]}`, "`max_tokens` must be greater than `thinking.budget_tokens`"},
	{"tool loop without leading thinking", anThinkingBody(2048, `[`+anUser+`,`+anAsstUses+`,`+anResults+`]`), "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`"},
	{"tool use in a user message", anBodyOf(`[{"role":"user","content":[{"type":"tool_use","id":"u","name":"x","input":{}}]}]`), "`tool_use` blocks can only be in `assistant` messages"},
}

func TestStrictValidation(t *testing.T) {
	suites := []struct {
		api, path string
		cases     []ruleCase
	}{
		{APIOpenAI, "/v1/chat/completions", openaiRules},
		{APIAnthropic, "/v1/messages", anthropicRules},
		{APIResponses, "/v1/responses", responsesRules},
	}
	for _, suite := range suites {
		for _, tc := range suite.cases {
			t.Run(suite.api+"/"+tc.name, func(t *testing.T) {
				s := newServer(t)
				s.Script(Text("accepted"))
				status, _, body := post(t, s, suite.path, tc.body)
				if len(s.Requests()) != 1 {
					t.Fatalf("%d requests recorded, want 1", len(s.Requests()))
				}
				if tc.wantErr == "" {
					if status != 200 || len(s.Violations()) != 0 {
						t.Fatalf("status %d, violations %v, body %s; want it accepted", status, s.Violations(), body)
					}
					return
				}
				if status != 400 {
					t.Fatalf("status = %d (body %s), want 400", status, body)
				}
				typ, msg := errorOf(t, suite.api, body)
				if typ != "invalid_request_error" || !strings.Contains(msg, tc.wantErr) {
					t.Errorf("error = %s %q, want invalid_request_error containing %q", typ, msg, tc.wantErr)
				}
				v := s.Violations()
				prefix := "request 0 (" + suite.api + "): "
				if len(v) != 1 || !strings.HasPrefix(v[0], prefix) || !strings.Contains(v[0], tc.wantErr) {
					t.Errorf("violations = %q, want one starting %q containing %q", v, prefix, tc.wantErr)
				}
				if s.Pending() != 1 {
					t.Errorf("a rejected request consumed a step (pending %d)", s.Pending())
				}
			})
		}
	}
}

// errorOf reads type and message from an error body of either shape,
// insisting on the API's own envelope.
func errorOf(t *testing.T, api string, body []byte) (typ, msg string) {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string  `json:"type"`
			Message string  `json:"message"`
			Param   *string `json:"param"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body %s: %v", body, err)
	}
	if api == APIAnthropic && (e.Type != "error" || !strings.HasPrefix(e.RequestID, "req_")) {
		t.Errorf("anthropic error envelope: %s", body)
	}
	if api == APIOpenAI && e.Type != "" {
		t.Errorf("openai error envelope has a top-level type: %s", body)
	}
	return e.Error.Type, e.Error.Message
}

func TestStrictOff(t *testing.T) {
	for _, path := range []string{"/v1/chat/completions", "/v1/messages"} {
		t.Run(path, func(t *testing.T) {
			s := newServer(t, WithStrict(false))
			s.Script(Text("lenient"), Text("lenient too"))
			for _, body := range []string{`this is not json`, `{"model":"m","messages":[{"role":"tool","content":"orphan"}]}`} {
				status, _, got := post(t, s, path, body)
				if status != 200 || !strings.Contains(string(got), "lenient") {
					t.Errorf("%q: status %d body %s, want the scripted reply", body, status, got)
				}
			}
			if v := s.Violations(); len(v) != 0 {
				t.Errorf("violations recorded with strict off: %v", v)
			}
			if len(s.Requests()) != 2 {
				t.Errorf("%d requests recorded, want 2", len(s.Requests()))
			}
		})
	}
}

func TestUnknownRouteAndMethod(t *testing.T) {
	s := newServer(t)
	s.Script(Text("never"))
	status, _, body := post(t, s, "/v1/v1/chat/completions", `{}`)
	if status != 404 || !strings.Contains(string(body), "Unknown request URL") {
		t.Errorf("unknown path: %d %s", status, body)
	}
	c := openaiClient(s)
	resp, err := c.Models.List(testCtx(t))
	if err == nil {
		t.Errorf("GET /v1/models succeeded: %+v", resp)
	}
	if len(s.Requests()) != 0 || s.Pending() != 1 {
		t.Errorf("non-API requests were recorded (%d) or consumed steps (pending %d)", len(s.Requests()), s.Pending())
	}
}
