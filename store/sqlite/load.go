package sqlite

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// loadCols is the column list of the load statement. Reading a column costs
// the driver a mutex round trip per sqlite3_column_* call (the connection
// is opened SQLITE_OPEN_FULLMUTEX): two or three for a value, one for a
// NULL. Most of a row's 25 columns hold their default, so the rarely set
// ones come back as NULL when they do (NULLIF), the three flags as one
// integer and the six usage numbers as one text: about half the calls of
// sqlrows.MessageCols for a transcript's rows. loadRow decodes it; the
// result is the same store.Message (the contract suite reads every field
// back). (SQLite gives | and << the same precedence: hence the brackets.)
const loadCols = `id, seq, turn_id, role, content, text, tool_calls, created_at,
	NULLIF(is_error | (synthetic << 1) | (archived << 2), 0),
	NULLIF(tool_call_id, ''), NULLIF(tool_name, ''), reasoning, NULLIF(api_content, ''),
	NULLIF(display_kind, ''), NULLIF(finish_reason, ''), NULLIF(provider, ''), NULLIF(model, ''),
	CASE WHEN input_tokens = 0 AND output_tokens = 0 AND cache_read_tokens = 0 AND cache_write_tokens = 0
		AND reasoning_tokens = 0 AND usage_reported = 0 THEN NULL
	ELSE printf('%d %d %d %d %d %d', input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
		reasoning_tokens, usage_reported) END`

// The bits of loadCols' flags column.
const (
	flagError = 1 << iota
	flagSynthetic
	flagArchived
)

// loadRow holds the raw columns of one row of loadCols while it is
// decoded; one loadRow serves a whole result set. The JSON columns are
// sql.RawBytes (copied into a reused buffer, decoded at once); the nullable
// ones are any, which database/sql fills with the driver's value as it is
// (a string, an int64 or nil) without converting it.
type loadRow struct {
	role, text                    string
	created                       int64
	content, toolCalls, reasoning sql.RawBytes
	flags, callID, toolName       any
	apiCon, kind, finish          any
	provider, model, usage        any
	dest                          []any
}

// scan reads the current row of rows (loadCols) into m and decodes it.
func (r *loadRow) scan(rows *sql.Rows, m *store.Message) error {
	r.dest = append(r.dest[:0], &m.ID, &m.Seq, &m.TurnID, &r.role, &r.content, &r.text, &r.toolCalls,
		&r.created, &r.flags, &r.callID, &r.toolName, &r.reasoning, &r.apiCon, &r.kind, &r.finish,
		&r.provider, &r.model, &r.usage)
	if err := rows.Scan(r.dest...); err != nil {
		return err
	}
	m.Role = llm.Role(r.role)
	m.CreatedAt = sqlrows.FromNanos(r.created)
	flags, err := nullInt(r.flags)
	if err != nil {
		return fmt.Errorf("message %d: flags: %w", m.ID, err)
	}
	m.IsError, m.Synthetic, m.Archived = flags&flagError != 0, flags&flagSynthetic != 0, flags&flagArchived != 0
	texts := [...]struct {
		v   any
		dst *string
	}{{r.callID, &m.ToolCallID}, {r.toolName, &m.ToolName}, {r.apiCon, &m.APIContent},
		{r.kind, (*string)(&m.Kind)}, {r.finish, (*string)(&m.FinishReason)}, {r.provider, &m.Provider},
		{r.model, &m.Model}}
	for _, t := range texts {
		if *t.dst, err = nullText(t.v); err != nil {
			return fmt.Errorf("message %d: %w", m.ID, err)
		}
	}
	if m.Usage, err = parseUsage(r.usage); err != nil {
		return fmt.Errorf("message %d: usage: %w", m.ID, err)
	}
	return sqlrows.DecodeParts(m, r.content, r.text, r.toolCalls, r.reasoning)
}

// nullText is the value of a text column folded to NULL when empty.
func nullText(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case []byte:
		return string(v), nil
	}
	return "", fmt.Errorf("unexpected %T in a text column", v)
}

// nullInt is the value of an integer column folded to NULL when zero.
func nullInt(v any) (int64, error) {
	switch v := v.(type) {
	case nil:
		return 0, nil
	case int64:
		return v, nil
	}
	return 0, fmt.Errorf("unexpected %T in an integer column", v)
}

// parseUsage reads loadCols' usage column: NULL for no usage at all, else
// the six numbers separated by spaces.
func parseUsage(v any) (llm.Usage, error) {
	s, err := nullText(v)
	if err != nil || s == "" {
		return llm.Usage{}, err
	}
	var n [6]int64
	for i := range n {
		f, rest, _ := strings.Cut(s, " ")
		if n[i], err = strconv.ParseInt(f, 10, 64); err != nil {
			return llm.Usage{}, err
		}
		s = rest
	}
	if s != "" {
		return llm.Usage{}, fmt.Errorf("trailing %q", s)
	}
	return llm.Usage{InputTokens: n[0], OutputTokens: n[1], CacheReadTokens: n[2], CacheWriteTokens: n[3],
		ReasoningTokens: n[4], Reported: n[5] != 0}, nil
}
