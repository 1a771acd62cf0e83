package fakellm

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestLoadScript(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    []Step
		wantErr string
	}{
		{
			name: "every field",
			in: `[
				{"text":"hi","reasoning":"r","finish":"length","usage":{"input":10,"output":2,"cache_read":3,"cache_write":4},"latency":"250ms","chunk_delay":1000000,"header":{"x-a":"b"}},
				{"calls":[{"id":"c1","name":"read","arguments":"{\"p\":1}"},{"name":"ls","arguments":"{"}]},
				{"error":{"status":429,"header":{"Retry-After":"2"},"type":"rate_limit_error","message":"slow","code":"rate_limit_exceeded","param":"model"}},
				{"text":"partial","stream_error":{"type":"overloaded_error","message":"Overloaded"}},
				{"text":"cut","drop":true},
				{"no_usage":true},
				{"hangup":true},
				{}
			]`,
			want: []Step{
				{Text: "hi", Reasoning: "r", Finish: "length", Usage: &Usage{Input: 10, Output: 2, CacheRead: 3, CacheWrite: 4}, Latency: 250 * time.Millisecond, ChunkDelay: time.Millisecond, Header: map[string]string{"x-a": "b"}},
				{Calls: []Call{{ID: "c1", Name: "read", Arguments: `{"p":1}`}, {Name: "ls", Arguments: "{"}}},
				{Error: &ErrorReply{Status: 429, Header: map[string]string{"Retry-After": "2"}, Type: "rate_limit_error", Message: "slow", Code: "rate_limit_exceeded", Param: "model"}},
				{Text: "partial", StreamError: &ErrorReply{Type: "overloaded_error", Message: "Overloaded"}},
				{Text: "cut", Drop: true},
				{NoUsage: true},
				{Hangup: true},
				{},
			},
		},
		{name: "empty array", in: `[]`, want: []Step{}},
		{name: "unknown field", in: `[{"txt":"typo"}]`, wantErr: "unknown field"},
		{name: "bad duration", in: `[{"latency":"soon"}]`, wantErr: "duration"},
		{name: "not an array", in: `{"text":"x"}`, wantErr: "load script"},
		{name: "trailing data", in: `[] []`, wantErr: "trailing data"},
		{name: "broken JSON", in: `[{"text":`, wantErr: "load script"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LoadScript(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("steps =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// TestStepJSONRoundTrip: what Marshal writes, LoadScript reads back.
func TestStepJSONRoundTrip(t *testing.T) {
	steps := []Step{
		TextCalls("t", ToolCall("a", `{}`)).WithLatency(time.Second).WithChunkDelay(time.Millisecond).WithUsage(5, 6),
		HTTPError(503, "overloaded_error", "busy").WithHeader("Retry-After", "1"),
		Drop("x"), Truncated("y"), Empty(), Hangup(),
	}
	b, err := json.Marshal(steps)
	if err != nil {
		t.Fatal(err)
	}
	got, err := LoadScript(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, steps) {
		t.Errorf("round trip =\n%+v\nwant\n%+v", got, steps)
	}
}

func TestLoadedScriptServes(t *testing.T) {
	steps, err := LoadScript(strings.NewReader(`[{"calls":[{"name":"read","arguments":"{\"path\":\"a.txt\"}"}]},{"text":"done"}]`))
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(t)
	s.Script(steps...)
	r, err := call(testCtx(t), s, mode{APIOpenAI, true}, "m")
	if err != nil || len(r.calls) != 1 || r.calls[0].Name != "read" {
		t.Fatalf("first reply = %+v, %v", r, err)
	}
}

func TestSplit(t *testing.T) {
	cases := []struct {
		name string
		in   string
		n    int
		want []string
	}{
		{"empty", "", 4, nil},
		{"short", "abc", 4, []string{"abc"}},
		{"exact", "abcdefgh", 4, []string{"abcd", "efgh"}},
		{"multibyte boundary", "aé€😀b", 4, []string{"aé", "€", "😀", "b"}},
		{"rune longer than n", "😀😀", 2, []string{"😀", "😀"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := split(tc.in, tc.n)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("split(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
			if strings.Join(got, "") != tc.in {
				t.Errorf("pieces do not rejoin to the input")
			}
			for _, p := range got {
				if !utf8.ValidString(p) {
					t.Errorf("piece %q is not valid UTF-8", p)
				}
			}
		})
	}
}

func TestEstimateUsage(t *testing.T) {
	req := Request{Body: make([]byte, 400)}
	cases := []struct {
		name string
		step Step
		want Usage
	}{
		{"empty output", Empty(), Usage{Input: 100}},
		{"tiny output counts one", Text("hi"), Usage{Input: 100, Output: 1}},
		{"text", Text(strings.Repeat("x", 40)), Usage{Input: 100, Output: 10}},
		{"calls count", Calls(ToolCall("abcd", strings.Repeat("y", 36))), Usage{Input: 100, Output: 10}},
		{"reasoning is part of output", Step{Reasoning: strings.Repeat("r", 20), Text: strings.Repeat("t", 20)}, Usage{Input: 100, Output: 10, Reasoning: 5}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := *estimateUsage(req, tc.step); got != tc.want {
				t.Errorf("estimate = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestFinishMapping(t *testing.T) {
	cases := []struct {
		step              Step
		neutral, oa, anth string
	}{
		{Text("x"), "stop", "stop", "end_turn"},
		{Calls(ToolCall("a", "{}")), "tool_calls", "tool_calls", "tool_use"},
		{Truncated("x"), "length", "length", "max_tokens"},
		{Step{Finish: "content_filter"}, "content_filter", "content_filter", "refusal"},
		{Step{Finish: "refusal"}, "refusal", "content_filter", "refusal"},
		{Step{Finish: "pause_turn"}, "pause_turn", "pause_turn", "pause_turn"},
	}
	for _, tc := range cases {
		t.Run(tc.neutral, func(t *testing.T) {
			n := neutralFinish(tc.step)
			if n != tc.neutral || oaFinish(n) != tc.oa || anStop(n) != tc.anth {
				t.Errorf("finish %q -> %q / %q, want %q / %q / %q", tc.step.Finish, n, oaFinish(n)+" "+anStop(n), tc.neutral, tc.oa, tc.anth)
			}
		})
	}
}
