package transcript

import (
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"unsafe"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// wantProjected is what the engine sent before Projector: the whole
// transcript projected, repaired and cleaned on every call.
func wantProjected(rows []store.Message) []llm.Message {
	msgs, _ := Project(rows)
	req := &llm.Request{Messages: msgs}
	CleanRequest(req)
	return req.Messages
}

// fuzzRows turns a fuzz sequence into stored rows, some archived, failure
// (display-only) or interrupted, some with API content or invalid UTF-8.
func fuzzRows(data []byte) []store.Message {
	msgs := buildSequence(data)
	rows := make([]store.Message, len(msgs))
	for i, m := range msgs {
		rows[i] = store.Message{ID: int64(i + 1), Seq: int64(i + 1), Message: m}
		switch b := data[min(i, len(data)-1)]; b % 16 {
		case 1:
			rows[i].Archived = true
		case 2:
			rows[i].Kind = store.RowFailure
		case 3:
			rows[i].Kind = store.RowInterrupted
		case 4:
			rows[i].APIContent = "api " + m.Text()
		case 5:
			if len(m.Content) > 0 {
				rows[i].Content = append([]llm.Part{llm.TextPart("bad \xed\xa0\x80 utf8")}, m.Content[1:]...)
			}
		}
	}
	return rows
}

// FuzzProjector feeds a Projector a transcript that grows call by call
// (and sometimes loses or archives earlier rows, as compaction and
// deletion do) and checks every result against the whole-transcript
// projection, and that its stable prefix never changes while the earlier
// rows do not.
func FuzzProjector(f *testing.F) {
	f.Add([]byte{0, 2, 2, 0x10, 0, 3, 0, 0, 2, 2, 0x10, 1, 3, 1, 0, 5})
	f.Add([]byte{2, 2, 3, 0, 0, 2, 0, 2, 2, 0x30, 0, 0, 1, 3, 1, 0, 0, 2, 0x10, 2, 3, 2})
	f.Add([]byte{0, 2, 2, 0x20, 0, 0, 3, 0x80, 0, 2, 3, 1, 2, 0x10, 0, 3, 0, 1, 0, 2, 0x10, 4})
	f.Add([]byte{0, 0, 0, 1, 0, 0x20, 5, 0, 2, 0, 2, 0x0b, 4, 3, 0, 1, 2, 0x13, 0, 1, 3, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		all := fuzzRows(data)
		var p Projector
		var prev []llm.Message
		prevStable := 0
		for n, step := 0, 0; n <= len(all); step++ {
			rows := all[:n]
			if step%5 == 0 {
				prev = nil // the rows went back to the unchanged ones
			}
			if step%5 == 4 && n > 2 {
				// Earlier rows change: one archived, one deleted.
				rows = append([]store.Message(nil), rows...)
				rows[1].Archived = true
				rows = append(rows[:0:0], append(rows[:1:1], rows[2:]...)...)
				prev = nil
			}
			hadPrefix, starts := len(p.keys) > 0, p.Starts()
			got, stable, _ := p.Project(rows)
			if step%5 == 4 && n > 2 && hadPrefix && p.Starts() == starts {
				t.Fatalf("call %d: earlier rows changed and the prefix did not start over", step)
			}
			req := &llm.Request{Messages: got}
			CleanRequestFrom(req, stable)
			got = req.Messages
			want := wantProjected(rows)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("call %d (%d rows, stable %d):\n got  %+v\n want %+v", step, len(rows), stable, got, want)
			}
			if stable > len(got) {
				t.Fatalf("stable %d of %d messages", stable, len(got))
			}
			if prev != nil && !reflect.DeepEqual(got[:min(stable, prevStable)], prev[:min(stable, prevStable)]) {
				t.Fatal("the stable prefix changed")
			}
			prev, prevStable = got, stable
			n += 1 + int(data[step%len(data)]%3)
		}
	})
}

// The first call of a resumed session projects all of it: the prefix it
// keeps is the repaired messages themselves and its row keys are sized
// once, not grown message by message (which allocated about five times
// the prefix in copies: 28 MB of garbage at 50,000 rows).
func TestProjectorFirstCallAllocation(t *testing.T) {
	const n = 6000
	rows := make([]store.Message, 0, n)
	for i := 0; len(rows) < n; i++ {
		id := fmt.Sprint("call_", i)
		for _, m := range []llm.Message{user(fmt.Sprint("task ", i)), asst("", call(id)), result(id, "output"), asst("done")} {
			rows = append(rows, store.Message{ID: int64(len(rows) + 1), Seq: int64(len(rows) + 1), Message: m})
		}
	}
	var p Projector
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	msgs, stable, _ := p.Project(rows)
	runtime.ReadMemStats(&after)
	if len(msgs) != n || stable < n-4 {
		t.Fatalf("%d messages, %d stable; want %d, nearly all stable", len(msgs), stable, n)
	}
	// What must be allocated: the projected input, the repaired prefix,
	// the result (a copy the caller may keep) and the row keys, plus the
	// repairer's bookkeeping and the id sets: about 490 bytes a row here.
	// The copies grown message by message made it about 1,000.
	perRow := (after.TotalAlloc - before.TotalAlloc) / n
	msgSize := uint64(unsafe.Sizeof(llm.Message{}))
	if limit := 5*msgSize + 120; perRow > limit {
		t.Errorf("first Project allocated %d bytes a row, want at most %d", perRow, limit)
	}
}
