package transcript

import (
	"strconv"
	"strings"
)

// Report counts what Repair changed. A zero Report means the sequence was
// already valid and was returned as it came.
type Report struct {
	DroppedLeading   int // assistant/tool messages before the first user message
	InvalidRoles     int // messages whose role is not user, assistant or tool (dropped)
	OrphanResults    int // tool results without a matching unanswered call (dropped)
	MissingResults   int // synthetic results added for unanswered calls
	Reordered        int // call groups whose results were moved into call order
	DuplicateIDs     int // tool calls renamed because their id was already used
	EmptyIDs         int // tool calls without an id that were given one
	MergedUsers      int // user messages merged into the user message before them
	MergedAssistants int // assistant messages merged into the assistant message before them
	MergedCallGroups int // assistant messages with calls merged into the one before (a turn stored split)
	EmptyAssistants  int // assistant messages given InterruptedPlaceholder
	EmptyUsers       int // user messages given EmptyUserText
}

// Changed reports whether Repair changed anything.
func (r Report) Changed() bool { return r != Report{} }

// String lists the non-zero counters ("orphan_results=1 missing_results=2"),
// or "ok" when nothing changed; it is meant for one debug log line.
func (r Report) String() string {
	fields := [...]struct {
		name string
		n    int
	}{
		{"dropped_leading", r.DroppedLeading},
		{"invalid_roles", r.InvalidRoles},
		{"orphan_results", r.OrphanResults},
		{"missing_results", r.MissingResults},
		{"reordered", r.Reordered},
		{"duplicate_ids", r.DuplicateIDs},
		{"empty_ids", r.EmptyIDs},
		{"merged_users", r.MergedUsers},
		{"merged_assistants", r.MergedAssistants},
		{"merged_call_groups", r.MergedCallGroups},
		{"empty_assistants", r.EmptyAssistants},
		{"empty_users", r.EmptyUsers},
	}
	var b strings.Builder
	for _, f := range fields {
		if f.n == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f.name)
		b.WriteByte('=')
		b.WriteString(strconv.Itoa(f.n))
	}
	if b.Len() == 0 {
		return "ok"
	}
	return b.String()
}
