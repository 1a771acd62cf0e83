package transcript

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/talaria-agent/talaria/llm"
)

// byteReader hands out fuzz bytes, then zeros.
type byteReader struct {
	data []byte
	pos  int
}

func (r *byteReader) next() byte {
	if r.pos >= len(r.data) {
		return 0
	}
	b := r.data[r.pos]
	r.pos++
	return b
}

// fuzzIDs is small on purpose so duplicates, orphans and collisions with
// generated names (x_2, call_1) are common.
var fuzzIDs = [...]string{"a", "b", "c", "", "a_2", "call_1"}

// buildSequence turns fuzz bytes into a message sequence with every kind of
// damage Repair handles.
func buildSequence(data []byte) []llm.Message {
	r := &byteReader{data: data}
	var msgs []llm.Message
	for n := 0; r.pos < len(r.data) && n < 48; n++ {
		op, arg := r.next(), r.next()
		tag := strconv.Itoa(n)
		text := func() string {
			switch arg % 4 {
			case 0:
				return ""
			case 1:
				return " "
			}
			return "t" + tag
		}
		switch op % 6 {
		case 0, 1:
			m := user(text())
			if arg&0x10 != 0 {
				m.Content = append(m.Content, image())
			}
			if arg&0x20 != 0 {
				m.Content = nil
			}
			msgs = append(msgs, m)
		case 2:
			m := asst(text())
			for k := range int(arg>>4) % 4 {
				c := call(fuzzIDs[int(r.next())%len(fuzzIDs)])
				c.Name = "tool" + strconv.Itoa(k)
				m.ToolCalls = append(m.ToolCalls, c)
			}
			if arg&0x08 != 0 {
				m.Reasoning = &llm.Reasoning{Text: "r" + tag, Signature: "s" + tag}
			}
			msgs = append(msgs, m)
		case 3, 4:
			id := fuzzIDs[int(arg)%len(fuzzIDs)]
			if arg&0x80 != 0 {
				msgs = append(msgs, missing(id))
			} else {
				msgs = append(msgs, result(id, "res"+tag))
			}
		case 5:
			msgs = append(msgs, llm.NewText(llm.RoleSystem, "sys"+tag))
		}
	}
	return msgs
}

func FuzzRepair(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 2, 2, 0x10, 0, 3, 0})                         // user, assistant with a call, its result
	f.Add([]byte{2, 2, 3, 0, 0, 2, 0, 2, 2, 0x30, 0, 0, 1, 3, 1}) // leading junk, then two calls
	f.Add([]byte{0, 2, 2, 0x20, 0, 0, 3, 0x80, 0, 2, 3, 1, 2, 0x10, 0, 3, 0})
	f.Add([]byte{0, 0, 0, 1, 0, 0x20, 5, 0, 2, 0, 2, 0x0b, 4, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := buildSequence(data)
		before := deepClone(in)
		out, rep := Repair(in)
		if !reflect.DeepEqual(in, before) {
			t.Fatal("Repair modified its input")
		}
		if err := validate(out); err != nil {
			t.Fatalf("invalid output (%v): %v\n in  %+v\n out %+v", rep, err, in, out)
		}
		again, rep2 := Repair(out)
		if rep2.Changed() || !reflect.DeepEqual(again, out) {
			t.Fatalf("not idempotent: %v\n out   %+v\n again %+v", rep2, out, again)
		}
		if !rep.Changed() && !reflect.DeepEqual(out, in) && len(in) > 0 {
			t.Fatalf("report says unchanged but output differs")
		}
		// Nothing a person wrote is lost: every user text survives, and so
		// does every assistant text after the first user message.
		users := texts(out, llm.RoleUser)
		assistants := texts(out, llm.RoleAssistant)
		seenUser := false
		for _, m := range in {
			s := strings.TrimSpace(m.Text())
			switch m.Role {
			case llm.RoleUser:
				seenUser = true
				if s != "" && !strings.Contains(users, s) {
					t.Fatalf("user text %q lost", s)
				}
			case llm.RoleAssistant:
				if seenUser && s != "" && !strings.Contains(assistants, s) {
					t.Fatalf("assistant text %q lost", s)
				}
			}
		}
	})
}

func FuzzCleanText(f *testing.F) {
	for _, s := range []string{"", "plain", "héllo 😀", "a\xffb", loneHigh, loneLow, loneHigh + loneLow, "\xed\xa0", "\xf4\x90\x80\x80", "\xef\xbf\xbd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := CleanText(s)
		if !utf8.ValidString(out) {
			t.Fatalf("CleanText(%q) = %q, not valid UTF-8", s, out)
		}
		if CleanText(out) != out {
			t.Fatalf("not idempotent on %q", s)
		}
		if utf8.ValidString(s) && out != s {
			t.Fatalf("valid %q changed to %q", s, out)
		}
		for _, r := range out {
			if r >= 0xD800 && r <= 0xDFFF {
				t.Fatalf("surrogate %U left in %q", r, out)
			}
		}
	})
}
