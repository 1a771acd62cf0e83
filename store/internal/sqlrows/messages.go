package sqlrows

import (
	"encoding/json"
	"fmt"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// MessageCols is the column list MessageRow reads, in order.
const MessageCols = `id, seq, turn_id, role, content, text, tool_calls, tool_call_id, tool_name,
	is_error, reasoning, api_content, display_kind, synthetic, archived, finish_reason,
	input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, usage_reported,
	provider, model, created_at`

// MessageRow holds the raw columns of one message row while it is decoded;
// one MessageRow serves a whole result set. The types are the drivers'
// cheapest: B for the JSON columns, decoded at once (sql.RawBytes for
// database/sql, []byte for pgx), T for the text and api_content columns,
// kept as strings (string for SQLite's TEXT, which the driver hands over
// without a copy; []byte for PostgreSQL's bytea).
type MessageRow[B ~[]byte, T ~string | ~[]byte] struct {
	role, kind, finish            string
	created                       int64
	content, toolCalls, reasoning B
	text, apiCon                  T
	dest                          []any // reused: a fresh one per row is 25 words of garbage
}

// Scan reads the current row of sc (MessageCols) into m and decodes it.
func (r *MessageRow[B, T]) Scan(sc Scanner, m *store.Message) error {
	u := &m.Usage
	r.dest = append(r.dest[:0], &m.ID, &m.Seq, &m.TurnID, &r.role, &r.content, &r.text, &r.toolCalls,
		&m.ToolCallID, &m.ToolName, &m.IsError, &r.reasoning, &r.apiCon, &r.kind, &m.Synthetic,
		&m.Archived, &r.finish, &u.InputTokens, &u.OutputTokens, &u.CacheReadTokens, &u.CacheWriteTokens,
		&u.ReasoningTokens, &u.Reported, &m.Provider, &m.Model, &r.created)
	if err := sc.Scan(r.dest...); err != nil {
		return err
	}
	m.Role = llm.Role(r.role)
	m.Kind = store.RowKind(r.kind)
	m.FinishReason = llm.FinishReason(r.finish)
	m.APIContent = string(r.apiCon)
	m.CreatedAt = FromNanos(r.created)
	return DecodeParts(m, r.content, string(r.text), r.toolCalls, r.reasoning)
}

// DecodeParts sets m's content, tool calls and reasoning from their
// columns (nil: NULL); m.ID only names the row in errors.
func DecodeParts(m *store.Message, content []byte, text string, toolCalls, reasoning []byte) error {
	var err error
	if m.Content, err = DecodeContent(content, text); err != nil {
		return fmt.Errorf("message %d: %w", m.ID, err)
	}
	m.ToolCalls = nil
	if toolCalls != nil {
		if err := json.Unmarshal(toolCalls, &m.ToolCalls); err != nil {
			return fmt.Errorf("message %d: decode tool calls: %w", m.ID, err)
		}
	}
	m.Reasoning = nil
	if reasoning != nil {
		m.Reasoning = new(llm.Reasoning)
		if err := json.Unmarshal(reasoning, m.Reasoning); err != nil {
			return fmt.Errorf("message %d: decode reasoning: %w", m.ID, err)
		}
	}
	return nil
}

// EncodedMessage is a message's column values computed before a write
// transaction, so JSON work does not hold a lock.
type EncodedMessage struct {
	M                             *store.Message
	Content, ToolCalls, Reasoning []byte // nil: NULL
	Text                          string
	CreatedAt                     int64 // M.CreatedAt, or the encoding time when zero
	ID, Seq                       int64 // set by the backend's insert
}

// Encode encodes msgs; a nil message is an error.
func Encode(msgs []*store.Message) ([]EncodedMessage, error) {
	rows := make([]EncodedMessage, len(msgs))
	t := Now()
	for i, m := range msgs {
		if m == nil {
			return nil, fmt.Errorf("message %d is nil", i)
		}
		r := &rows[i]
		r.M = m
		var err error
		if r.Content, r.Text, err = EncodeContent(m.Content); err != nil {
			return nil, err
		}
		if r.ToolCalls, err = EncodeToolCalls(m.ToolCalls); err != nil {
			return nil, err
		}
		if r.Reasoning, err = EncodeReasoning(m.Reasoning); err != nil {
			return nil, err
		}
		r.CreatedAt = Nanos(m.CreatedAt)
		if r.CreatedAt == 0 {
			r.CreatedAt = t.UnixNano()
		}
	}
	return rows, nil
}

// Publish sets the fields a store assigns (ID, Seq, SessionID, and
// CreatedAt when zero) on the caller's messages, once the write committed.
func Publish(sessionID string, msgs []*store.Message, rows []EncodedMessage) {
	for i, m := range msgs {
		m.ID, m.Seq, m.SessionID = rows[i].ID, rows[i].Seq, sessionID
		if m.CreatedAt.IsZero() {
			m.CreatedAt = FromNanos(rows[i].CreatedAt)
		}
	}
}
