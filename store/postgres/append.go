package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// appendSQL is a whole fenced Append in one statement, so one round trip
// instead of four (BEGIN, admit, insert, COMMIT): the lease check and seq
// reservation of admitSQL, then the rows, unnested from one array per
// column, inserted with consecutive seqs. The statement is its own
// transaction: the insert happens only when the reservation did. Its
// result has one row per inserted message, none when refused.
const appendSQL = `WITH lease AS (
		SELECT 1 FROM leases WHERE session_id = $1 AND token = $2 AND NOT released FOR SHARE),
	adm AS (
		UPDATE sessions SET last_seq = last_seq + $3, updated_at = $4,
			input_tokens = input_tokens + $29, output_tokens = output_tokens + $30,
			cache_read_tokens = cache_read_tokens + $31, cache_write_tokens = cache_write_tokens + $32,
			reasoning_tokens = reasoning_tokens + $33, usage_reported = usage_reported OR $34,
			cost_usd = cost_usd + $35, api_calls = api_calls + $36
		WHERE id = $1 AND ended_at IS NULL AND ($2 = 0 OR EXISTS (SELECT 1 FROM lease))
		RETURNING last_seq),
	` + insRowsSQL + `
	SELECT id, seq FROM ins`

// insRowsSQL is the ins CTE of appendSQL and acquireAppendSQL: the rows,
// unnested from one array per column ($5 to $28), inserted into session $1
// after the seqs adm reserved ($3 of them).
const insRowsSQL = `ins AS (
		INSERT INTO messages (session_id, seq, turn_id, role, content, text, tool_calls, tool_call_id,
			tool_name, is_error, reasoning, api_content, display_kind, synthetic, archived, finish_reason,
			input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens,
			usage_reported, provider, model, created_at, search)
		SELECT $1, adm.last_seq - $3 + r.ord, r.turn_id, r.role, r.content, r.text, r.tool_calls, r.tool_call_id,
			r.tool_name, r.is_error, r.reasoning, r.api_content, r.display_kind, r.synthetic, r.archived,
			r.finish_reason, r.input_tokens, r.output_tokens, r.cache_read_tokens, r.cache_write_tokens,
			r.reasoning_tokens, r.usage_reported, r.provider, r.model, r.created_at, r.search::tsvector
		FROM adm, unnest($5::text[], $6::text[], $7::bytea[], $8::bytea[], $9::bytea[], $10::text[],
			$11::text[], $12::bool[], $13::bytea[], $14::bytea[], $15::text[], $16::bool[], $17::bool[],
			$18::text[], $19::int8[], $20::int8[], $21::int8[], $22::int8[], $23::int8[], $24::bool[],
			$25::text[], $26::text[], $27::int8[], $28::text[])
			WITH ORDINALITY AS r(turn_id, role, content, text, tool_calls, tool_call_id, tool_name, is_error,
				reasoning, api_content, display_kind, synthetic, archived, finish_reason, input_tokens,
				output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, usage_reported,
				provider, model, created_at, search, ord)
		RETURNING id, seq)`

// appendOne is Append (and AppendSpend, adding sp) as one statement (see
// appendSQL). A refusal is explained afterwards in a transaction of its
// own; nothing was written.
func (s *Store) appendOne(ctx context.Context, op string, f store.Fence, rows []row, sp store.Spend) error {
	if err := s.ready(op); err != nil {
		return err
	}
	n := len(rows)
	u := sp.Usage
	args := append([]any{f.SessionID, f.Token, int64(n), sqlrows.Nanos(sqlrows.Now())}, columns(rows)...)
	args = append(args, u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens,
		u.Reported, sp.CostUSD, sp.APICalls)
	res, err := s.pool.Query(ctx, appendSQL, args...)
	if err != nil {
		return s.wrap(op, err)
	}
	var got []idSeq
	for res.Next() {
		var v idSeq
		if err := res.Scan(&v.id, &v.seq); err != nil {
			res.Close()
			return s.wrap(op, err)
		}
		got = append(got, v)
	}
	res.Close()
	if err := res.Err(); err != nil {
		return s.wrap(op, err)
	}
	if len(got) == n {
		return s.wrap(op, place(rows, got))
	}
	if len(got) == 0 {
		return s.tx(ctx, op, func(tx pgx.Tx) error {
			if err := s.whyNotLive(ctx, tx, op, f.SessionID); err != nil {
				return err
			}
			return s.checkFence(ctx, tx, op, f)
		})
	}
	return s.wrap(op, fmt.Errorf("append stored %d of %d rows", len(got), n))
}

// idSeq is a row's id and seq as an insert returned them.
type idSeq struct{ id, seq int64 }

// place sets each row's ID and Seq from got, one per row. The seqs are
// consecutive; each row is placed by its seq, not by the order RETURNING
// happened to use.
func place(rows []row, got []idSeq) error {
	if len(got) == 0 {
		return nil
	}
	first := got[0].seq
	for _, v := range got {
		first = min(first, v.seq)
	}
	for _, v := range got {
		k := v.seq - first
		if k < 0 || k >= int64(len(rows)) {
			return fmt.Errorf("append: unexpected seq %d", v.seq)
		}
		rows[k].ID, rows[k].Seq = v.id, v.seq
	}
	return nil
}

// columns are the rows as one array per column: appendSQL's and
// acquireAppendSQL's $5 to $28.
func columns(rows []row) []any {
	n := len(rows)
	var (
		turnID, role, toolCallID, toolName, kind, finish, provider, model, search = make([]string, n),
			make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n)
		content, text, toolCalls, reasoning, apiContent = make([][]byte, n), make([][]byte, n),
			make([][]byte, n), make([][]byte, n), make([][]byte, n)
		isError, synthetic, archived, reported = make([]bool, n), make([]bool, n), make([]bool, n), make([]bool, n)
		in, out, cr, cw, rt, created           = make([]int64, n), make([]int64, n), make([]int64, n),
			make([]int64, n), make([]int64, n), make([]int64, n)
	)
	for i := range rows {
		r := &rows[i]
		m := r.M
		u := m.Usage
		turnID[i], role[i], toolCallID[i], toolName[i] = m.TurnID, string(m.Role), m.ToolCallID, m.ToolName
		kind[i], finish[i], provider[i], model[i], search[i] = string(m.Kind), string(m.FinishReason), m.Provider, m.Model, r.search
		content[i], text[i], toolCalls[i], reasoning[i], apiContent[i] = r.Content, nonNil(r.Text), r.ToolCalls,
			r.Reasoning, nonNil(m.APIContent)
		isError[i], synthetic[i], archived[i], reported[i] = m.IsError, m.Synthetic, m.Archived, u.Reported
		in[i], out[i], cr[i], cw[i], rt[i], created[i] = u.InputTokens, u.OutputTokens, u.CacheReadTokens,
			u.CacheWriteTokens, u.ReasoningTokens, r.CreatedAt
	}
	return []any{turnID, role, content, text, toolCalls, toolCallID, toolName, isError, reasoning, apiContent, kind,
		synthetic, archived, finish, in, out, cr, cw, rt, reported, provider, model, created, search}
}
