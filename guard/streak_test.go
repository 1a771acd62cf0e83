package guard

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

type call struct {
	tool, args, result string
	repeatable         bool
}

func TestStreak(t *testing.T) {
	read := func(args, result string) call { return call{tool: "read", args: args, result: result} }
	same := read(`{"path":"a.go"}`, "package a")
	tests := []struct {
		name       string
		threshold  int
		calls      []call
		reset      int // call Reset before this index (0: never)
		wantCounts []int
		wantNotice []bool
	}{
		{
			name:       "notice from the third identical call",
			calls:      []call{same, same, same, same},
			wantCounts: []int{1, 2, 3, 4},
			wantNotice: []bool{false, false, true, true},
		},
		{
			name:       "custom threshold",
			threshold:  2,
			calls:      []call{same, same},
			wantCounts: []int{1, 2},
			wantNotice: []bool{false, true},
		},
		{
			name:       "different arguments reset",
			calls:      []call{same, same, read(`{"path":"b.go"}`, "package a"), same},
			wantCounts: []int{1, 2, 1, 1},
			wantNotice: []bool{false, false, false, false},
		},
		{
			name:       "changed result resets",
			calls:      []call{same, same, read(`{"path":"a.go"}`, "package a // edited"), read(`{"path":"a.go"}`, "package a // edited")},
			wantCounts: []int{1, 2, 1, 2},
			wantNotice: []bool{false, false, false, false},
		},
		{
			name:       "different tool resets",
			calls:      []call{same, same, {tool: "cat", args: `{"path":"a.go"}`, result: "package a"}, same},
			wantCounts: []int{1, 2, 1, 1},
			wantNotice: []bool{false, false, false, false},
		},
		{
			name:       "Reset starts over",
			calls:      []call{same, same, same},
			reset:      2,
			wantCounts: []int{1, 2, 1},
			wantNotice: []bool{false, false, false},
		},
		{
			name: "key order and white space do not matter",
			calls: []call{
				read(`{"path":"a.go","limit":10}`, "x"),
				read(`{ "limit": 10, "path": "a.go" }`, "x"),
				read("{\n\t\"limit\":10,\n\t\"path\":\"a.go\"\n}", "x"),
			},
			wantCounts: []int{1, 2, 3},
			wantNotice: []bool{false, false, true},
		},
		{
			name: "nested objects are canonical too",
			calls: []call{
				read(`{"o":{"b":1,"a":[{"y":2,"x":1}]}}`, "x"),
				read(`{"o":{"a":[{"x":1,"y":2}],"b":1}}`, "x"),
			},
			wantCounts: []int{1, 2},
			wantNotice: []bool{false, false},
		},
		{
			name:       "numbers keep their text",
			calls:      []call{read(`{"n":1}`, "x"), read(`{"n":1.0}`, "x")},
			wantCounts: []int{1, 1},
			wantNotice: []bool{false, false},
		},
		{
			name:       "empty arguments equal an empty object",
			calls:      []call{read("", "x"), read("{}", "x"), read(" { } ", "x")},
			wantCounts: []int{1, 2, 3},
			wantNotice: []bool{false, false, true},
		},
		{
			name:       "invalid JSON compared as is",
			calls:      []call{read(`{"path":`, "x"), read(`{"path":`, "x"), read(`{ "path":`, "x")},
			wantCounts: []int{1, 2, 1},
			wantNotice: []bool{false, false, false},
		},
		{
			name:       "trailing data is not canonicalized away",
			calls:      []call{read(`{"a":1}`, "x"), read(`{"a":1} {"b":2}`, "x")},
			wantCounts: []int{1, 1},
			wantNotice: []bool{false, false},
		},
		{
			name: "repeatable tools are exempt and reset nothing",
			calls: []call{
				same, same,
				{tool: "process_poll", args: `{"id":1}`, result: "running", repeatable: true},
				{tool: "process_poll", args: `{"id":1}`, result: "running", repeatable: true},
				{tool: "process_poll", args: `{"id":1}`, result: "running", repeatable: true},
				same,
			},
			wantCounts: []int{1, 2, 0, 0, 0, 3},
			wantNotice: []bool{false, false, false, false, false, true},
		},
		{
			name: "name and arguments cannot bleed into each other",
			calls: []call{
				{tool: "ab", args: "c", result: "x"},
				{tool: "a", args: "bc", result: "x"},
			},
			wantCounts: []int{1, 1},
			wantNotice: []bool{false, false},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStreak(tc.threshold)
			for i, c := range tc.calls {
				if tc.reset != 0 && i == tc.reset {
					s.Reset()
				}
				n, notice := s.Observe(c.tool, c.args, c.result, c.repeatable)
				if n != tc.wantCounts[i] {
					t.Errorf("call %d: count %d, want %d", i, n, tc.wantCounts[i])
				}
				if (notice != "") != tc.wantNotice[i] {
					t.Errorf("call %d: notice %q, want one: %v", i, notice, tc.wantNotice[i])
				}
				if notice != "" && notice != FormatIdenticalCallNotice(n, c.tool) {
					t.Errorf("call %d: notice %q", i, notice)
				}
			}
		})
	}
}

func TestIdenticalCallNoticeText(t *testing.T) {
	tests := []struct {
		n    int
		want string
	}{
		{1, "1st"}, {2, "2nd"}, {3, "3rd"}, {4, "4th"}, {11, "11th"}, {12, "12th"},
		{13, "13th"}, {21, "21st"}, {22, "22nd"}, {23, "23rd"}, {101, "101st"}, {111, "111th"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			got := FormatIdenticalCallNotice(tc.n, "read_file")
			want := "[talaria: this is the " + tc.want + " identical call of read_file with the same arguments"
			if !strings.HasPrefix(got, want) || strings.Contains(got, "%!") {
				t.Errorf("got %q", got)
			}
			if !strings.HasPrefix(got, IdenticalCallNoticePrefix) || !HasIdenticalCallNotice("result text\n"+got) {
				t.Errorf("notice %q is not recognised", got)
			}
		})
	}
	if HasIdenticalCallNotice("plain result") {
		t.Error("plain result recognised as carrying a notice")
	}
}

func TestStreakConcurrentObserve(t *testing.T) {
	s := NewStreak(3)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				s.Observe("read", fmt.Sprintf(`{"i":%d}`, i%2), "same", false)
			}
		})
	}
	wg.Wait()
	s.Reset()
	if n, _ := s.Observe("read", "{}", "x", false); n != 1 {
		t.Errorf("count after Reset = %d, want 1", n)
	}
}

func TestIsNudge(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{ContinueNudge, true},
		{EmptyRetryNudge, true},
		{"  " + ContinueNudge + "\n", true},
		{"please continue", false},
		{"", false},
	}
	for _, tc := range tests {
		t.Run(tc.text, func(t *testing.T) {
			if got := IsNudge(tc.text); got != tc.want {
				t.Errorf("IsNudge = %v, want %v", got, tc.want)
			}
		})
	}
}
