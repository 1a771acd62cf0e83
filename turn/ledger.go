package turn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
)

// ledgerStart records c as started before it runs, with the changed file's
// content hash for a tool.FileChanger. An error means the call must not
// run: its start is not durable (or this node lost the session's lease),
// so a node continuing the turn could not tell whether it ran.
func (e *Engine) ledgerStart(ctx context.Context, st *state, c llm.ToolCall, t tool.Tool, args json.RawMessage) (*store.ToolCallRecord, error) {
	if e.cfg.Ledger == nil {
		return nil, nil
	}
	rec := &store.ToolCallRecord{SessionID: st.sessionID(), TurnID: st.in.TurnID, CallID: c.ID, Tool: c.Name,
		Node: e.cfg.Node, Fence: st.live.fence.Token, ArgsHash: HashBytes([]byte(c.Arguments))}
	if fc, ok := t.(tool.FileChanger); ok {
		if p, ok := fc.ChangedFile(args); ok {
			rec.Path, rec.BeforeHash = p, FileHash(p)
		}
	}
	dctx, cancel := durable(ctx)
	defer cancel()
	return rec, e.cfg.Ledger.ToolStarted(dctx, rec)
}

// ledgerFinish records a call finished once its result row is stored.
// A failure is only logged: the result row is what a continuing node
// trusts first.
func (e *Engine) ledgerFinish(ctx context.Context, st *state, rec *store.ToolCallRecord, row *store.Message) {
	if rec == nil || e.cfg.Ledger == nil {
		return
	}
	rec.ResultID, rec.IsError = row.ID, row.IsError
	if rec.Path != "" {
		rec.AfterHash = FileHash(rec.Path)
	}
	dctx, cancel := durable(ctx)
	defer cancel()
	if err := e.cfg.Ledger.ToolFinished(dctx, rec); err != nil {
		e.log.Warn("could not record a tool call as finished in the ledger; its stored result still counts",
			"session", st.sessionID(), "call", rec.CallID, "error", err)
	}
}

// ledgerRefused ends the turn for a call whose start could not be
// recorded; the call did not run.
func ledgerRefused(st *state, err error) {
	if errors.Is(err, store.ErrLeaseLost) {
		st.setExit(ExitLeaseLost, &Failure{
			Message: "Another process took over this session before a tool call could start, so it was not run here. Nothing this turn saved is lost."})
		return
	}
	st.setExit(ExitPersistenceFailed, persistFailure("the start of a tool call (the call was not run)", err))
}

// HashBytes is the hex SHA-256 of b, as the ledger records arguments.
func HashBytes(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// FileHash is the hex SHA-256 of the file at path, store.HashAbsent when
// it does not exist, "" when it cannot be read or is not a regular file.
func FileHash(path string) string {
	// Non-blocking: a FIFO the model made where it then writes must not
	// hang the turn in open(2), where no context reaches.
	f, err := os.OpenFile(path, os.O_RDONLY|nonBlock, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return store.HashAbsent
	}
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}
