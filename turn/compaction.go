package turn

import (
	"context"
	"errors"
	"fmt"

	"github.com/talaria-agent/talaria/catalogue"
	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/store"
)

// ErrCompressionDisabled is CompactSession's error when the engine has no
// Compressor.
var ErrCompressionDisabled = errors.New("compression is disabled in the configuration (compression.disabled)")

// Compacted is what CompactSession did.
type Compacted struct {
	compact.Output
	// Session holds the compressed transcript: the one compacted, or its
	// continuation when the Rotator moved it.
	Session *store.Session
	// Rotated is set when the session was continued in Session.
	Rotated bool
}

// CompactSession compresses a session's live transcript now, whatever its
// size (the /compact command), and makes the result durable the way the
// preflight gate does inside a turn: in place, or in a child session when
// rot is set. The caller holds the session's lease and passes its fence.
// The summary call's usage and cost are added to the session's totals (a
// turn counts them in its own result instead).
func (e *Engine) CompactSession(ctx context.Context, sess *store.Session, fence store.Fence, rot Rotator) (Compacted, error) {
	res := Compacted{Session: sess}
	if e.cfg.Compressor == nil {
		return res, ErrCompressionDisabled
	}
	rows, err := e.cfg.Store.Messages(ctx, sess.ID, store.MessageQuery{})
	if err != nil {
		return res, err
	}
	if len(rows) == 0 {
		return res, fmt.Errorf("session %s: %w", sess.ID, compact.ErrNothingToCompress)
	}
	model := e.cfg.Catalogue.Lookup(e.cfg.Routes[0].Model)
	out, cost, _, err := e.compressRows(ctx, model, compact.Input{
		System: sess.SystemPrompt,
		Tools:  e.cfg.Tools.Specs(),
		Rows:   rows,
		Target: e.cfg.Threshold.For(model).Limit(model.Window),
		Force:  true,
	})
	res.Output = out
	if err != nil {
		return res, fmt.Errorf("compress session %s: %w", sess.ID, err)
	}
	out = carryTodo(rows, out)
	at, _, err := e.persistCompressed(ctx, sessionAt{sess, fence}, rows[len(rows)-1].Seq, out, "", rot)
	if err != nil {
		if rot == nil {
			err = fmt.Errorf("save the compressed session: %w", err)
		}
		return res, err
	}
	res.Session, res.Rotated = at.session, at.session.ID != sess.ID
	if out.Usage.Reported {
		if err := e.cfg.Store.AddUsage(ctx, at.session.ID, out.Usage, cost, 1); err != nil {
			e.log.Warn("could not add the summary's usage to the session", "session", at.session.ID, "error", err)
		}
	}
	return res, nil
}

// compressRows runs one compression pass and prices its summary call on
// the compressor's own model, or on model (the one in use) when it names
// none. The Output and the cost come back with an error too.
func (e *Engine) compressRows(ctx context.Context, model catalogue.Model, in compact.Input) (out compact.Output, costUSD float64, costKnown bool, err error) {
	out, err = e.cfg.Compressor.Compress(ctx, in)
	if out.Usage.Reported {
		if e.cfg.Compressor.Model != "" {
			model = e.cfg.Catalogue.Lookup(e.cfg.Compressor.Model)
		}
		costUSD, costKnown = model.Cost(out.Usage)
	}
	return out, costUSD, costKnown, err
}

// sessionAt is a session and the fence its transcript is written with: one
// value, so the two never disagree (a turn's live session is one, replaced
// whole when a rotation continues the turn in a child session).
type sessionAt struct {
	session *store.Session
	fence   store.Fence
}

// persistCompressed makes a pass's rows the durable, live transcript of
// at, whose live rows end at lastSeq: in place (store.Replace archives
// them), or in a child session when rot is set. Rows without a turn id get turnID,
// rows without a time the engine's clock. It returns where the transcript
// lives now and the rows as written.
func (e *Engine) persistCompressed(ctx context.Context, at sessionAt, lastSeq int64, out compact.Output, turnID string, rot Rotator) (sessionAt, []*store.Message, error) {
	rows := make([]*store.Message, len(out.Rows))
	for i := range out.Rows {
		r := out.Rows[i]
		if r.TurnID == "" {
			r.TurnID = turnID
		}
		if r.CreatedAt.IsZero() {
			r.CreatedAt = e.cfg.Now()
		}
		rows[i] = &r
	}
	dctx, cancel := durable(ctx)
	defer cancel()
	if rot == nil {
		return at, rows, e.cfg.Store.Replace(dctx, at.fence, lastSeq, rows...)
	}
	child, fence, err := rot.Rotate(dctx, rows)
	if err != nil {
		return at, nil, err
	}
	return sessionAt{child, fence}, rows, nil
}
