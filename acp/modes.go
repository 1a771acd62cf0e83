package acp

import (
	"context"
	"encoding/json"

	"github.com/talaria-agent/talaria/tool/sandbox"
)

// modeText describes the sandbox modes an editor may switch between.
var modeText = map[sandbox.Mode][2]string{
	sandbox.ReadOnly:       {"Read only", "Tools read the workspace; nothing is written, no network."},
	sandbox.WorkspaceWrite: {"Workspace write", "Tools may change files in the workspace only."},
	sandbox.Off:            {"Unconfined", "No sandbox, as the operator configured."},
}

// modes returns the sandbox modes a session may use: the configured one
// and those narrower, never wider. nil when the server was given none.
func (s *Server) modes(current sandbox.Mode) *SessionModeState {
	top, err := sandbox.ParseMode(s.opt.SandboxMode)
	if s.opt.SandboxMode == "" || err != nil {
		return nil
	}
	st := &SessionModeState{CurrentModeID: string(current), AvailableModes: []SessionMode{}}
	for _, m := range sandbox.Modes {
		if top.Narrower(m) == m {
			t := modeText[m]
			st.AvailableModes = append(st.AvailableModes, SessionMode{ID: string(m), Name: t[0], Description: t[1]})
		}
	}
	return st
}

// allowedMode checks id against the modes this server offers.
func (s *Server) allowedMode(id string) (sandbox.Mode, error) {
	st := s.modes("")
	if st == nil {
		return "", Errorf(CodeMethodNotFound, "talaria offers no session modes here")
	}
	for _, m := range st.AvailableModes {
		if m.ID == id {
			return sandbox.Mode(id), nil
		}
	}
	return "", Errorf(CodeInvalidParams, "mode %q is not offered: the configured sandbox (%s) allows only as wide", id, s.opt.SandboxMode)
}

// setMode reopens the session's agent under the narrower (or restored)
// sandbox mode: tools are built once per agent, so a new mode needs a new
// agent. The session, its history and its "allow always" answers stay.
func (s *Server) setMode(ctx context.Context, params json.RawMessage) (any, error) {
	var p SetSessionModeRequest
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	ss, err := s.session(p.SessionID)
	if err != nil {
		return nil, err
	}
	mode, err := s.allowedMode(p.ModeID)
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	running := ss.running
	ss.mu.Unlock()
	if running {
		return nil, Errorf(CodeInvalidRequest, "a prompt is running in session %s; change the mode between prompts", ss.id)
	}
	next, err := s.open(ctx, ss.cwd, ss.servers, mode)
	if err != nil {
		return nil, err
	}
	next.id = ss.id
	ss.mu.Lock()
	for k, v := range ss.always {
		next.always[k] = v
	}
	ss.mu.Unlock()
	s.register(next)
	return struct{}{}, nil
}
