package transcript

import (
	"reflect"
	"slices"
	"testing"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

func row(m llm.Message) store.Message { return store.Message{Message: m} }

func TestProject(t *testing.T) {
	archived := row(user("old task"))
	archived.Archived = true
	archivedAnswer := row(asst("old answer"))
	archivedAnswer.Archived = true
	failure := row(asst("provider said no: HTTP 401"))
	failure.Kind = store.RowFailure
	failure.Synthetic = true
	interruptedStamped := row(asst(""))
	interruptedStamped.Kind = store.RowInterrupted
	interruptedStamped.APIContent = InterruptedPlaceholder
	interruptedLegacy := row(asst(""))
	interruptedLegacy.Kind = store.RowInterrupted
	replayed := row(asst("display text with **markdown**"))
	replayed.APIContent = "exact bytes sent"
	correction := row(llm.Message{Role: llm.RoleUser, Content: []llm.Part{llm.TextPart("fix it"), image(), llm.TextPart("please")}})
	correction.APIContent = "[correction] fix it please"
	nudge := row(user("[talaria: continue]"))
	nudge.Kind = store.RowNudge
	nudge.Synthetic = true
	summary := row(user("summary of earlier work"))
	summary.Kind = store.RowSummary

	tests := []struct {
		name string
		rows []store.Message
		want []llm.Message
		rep  Report
	}{
		{
			name: "archived rows are left out",
			rows: []store.Message{archived, archivedAnswer, row(user("new task")), row(asst("ok"))},
			want: []llm.Message{user("new task"), asst("ok")},
		},
		{
			name: "display-only rows are left out and the users merge",
			rows: []store.Message{row(user("hi")), failure, row(user("retry"))},
			want: []llm.Message{user("hi\n\nretry")},
			rep:  Report{MergedUsers: 1},
		},
		{
			name: "api_content replaces the display text",
			rows: []store.Message{row(user("hi")), replayed},
			want: []llm.Message{user("hi"), asst("exact bytes sent")},
		},
		{
			name: "api_content replaces text parts and keeps images",
			rows: []store.Message{correction},
			want: []llm.Message{{Role: llm.RoleUser, Content: []llm.Part{llm.TextPart("[correction] fix it please"), image()}}},
		},
		{
			name: "stamped interrupted row sends the placeholder without a repair",
			rows: []store.Message{row(user("hi")), interruptedStamped, row(user("go on"))},
			want: []llm.Message{user("hi"), asst(InterruptedPlaceholder), user("go on")},
		},
		{
			name: "legacy interrupted row converges at projection",
			rows: []store.Message{row(user("hi")), interruptedLegacy, row(user("go on"))},
			want: []llm.Message{user("hi"), asst(InterruptedPlaceholder), user("go on")},
		},
		{
			name: "unmarked empty assistant is still repaired",
			rows: []store.Message{row(user("hi")), row(asst("")), row(user("go on"))},
			want: []llm.Message{user("hi"), asst(InterruptedPlaceholder), user("go on")},
			rep:  Report{EmptyAssistants: 1},
		},
		{
			name: "nudges, notices and summaries are sent",
			rows: []store.Message{summary, row(asst("ok")), nudge},
			want: []llm.Message{user("summary of earlier work"), asst("ok"), user("[talaria: continue]")},
		},
		{
			name: "crash between the assistant row and its results",
			rows: []store.Message{row(user("run it")), row(asst("", call("c1"), call("c2"))), row(result("c1", "r1"))},
			want: []llm.Message{user("run it"), asst("", call("c1"), call("c2")), result("c1", "r1"), missing("c2")},
			rep:  Report{MissingResults: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := cloneRows(tc.rows)
			got, rep := Project(tc.rows)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Project:\n got  %+v\n want %+v", got, tc.want)
			}
			if rep != tc.rep {
				t.Errorf("report = %v, want %v", rep, tc.rep)
			}
			if !reflect.DeepEqual(tc.rows, before) {
				t.Error("rows modified")
			}
			if err := validate(got); err != nil {
				t.Errorf("output invalid: %v", err)
			}
		})
	}
}

func cloneRows(rows []store.Message) []store.Message {
	out := slices.Clone(rows)
	msgs := make([]llm.Message, len(rows))
	for i := range rows {
		msgs[i] = rows[i].Message
	}
	for i, m := range deepClone(msgs) {
		out[i].Message = m
	}
	return out
}

// sessionRows builds n rows of a typical tool-using session.
func sessionRows(n int) []store.Message {
	rows := make([]store.Message, 0, n)
	for i := 0; len(rows) < n; i++ {
		id := "call_" + string(rune('a'+i%26)) + "_" + itoa(i)
		switch i % 4 {
		case 0:
			rows = append(rows, row(user("please look at file number "+itoa(i))))
		case 1:
			rows = append(rows, row(asst("", call(id))))
			if len(rows) < n {
				rows = append(rows, row(result(id, "contents of the file, a few hundred bytes of text")))
			}
		case 2:
			r := row(asst("here is what I found"))
			r.APIContent = "here is what I found"
			rows = append(rows, r)
		case 3:
			r := row(user("old"))
			r.Archived = true
			rows = append(rows, r)
		}
	}
	return rows
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

func TestProjectLargeSessionIsValid(t *testing.T) {
	rows := sessionRows(10_000)
	got, rep := Project(rows)
	if err := validate(got); err != nil {
		t.Fatal(err)
	}
	// Archived user rows vanish, so the surrounding users stay apart only
	// because an assistant sits between them; nothing else needs repair.
	if rep.Changed() {
		t.Errorf("a well-formed session needed repair: %v", rep)
	}
}

func BenchmarkProject10k(b *testing.B) {
	rows := sessionRows(10_000)
	b.ReportAllocs()
	for b.Loop() {
		Project(rows)
	}
}

func BenchmarkRepair10k(b *testing.B) {
	msgs, _ := Project(sessionRows(10_000))
	b.ReportAllocs()
	for b.Loop() {
		Repair(msgs)
	}
}
