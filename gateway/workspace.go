package gateway

import (
	"context"
	"net/http"
	"slices"

	"github.com/talaria-agent/talaria/api"
)

// DefaultWorkspace names the server's own workspace: that of the agent
// Config.NewAgent builds for the zero AgentSpec.
const DefaultWorkspace = "default"

// Workspace is a root the operator lets sessions work in, chosen over the
// API by its name, never by a path.
type Workspace struct {
	Root string
	// Principals may choose it; empty: every principal.
	Principals []string
}

// errWorkspace is the one answer for a workspace that is not the caller's
// to choose: it says nothing about the host's file system, not even
// whether a name exists for another principal.
var errWorkspace = errf(http.StatusBadRequest, api.CodeBadRequest,
	`"workspace" must be the name of a workspace this server offers you (or empty for the default)`)

// workspaceRoot resolves the workspace name a request chose to its root;
// "" and DefaultWorkspace are the server's own workspace.
func (g *Gateway) workspaceRoot(ctx context.Context, name string) (string, error) {
	if name == "" || name == DefaultWorkspace {
		if w, ok := g.cfg.Workspaces[DefaultWorkspace]; ok && !w.allows(principalOf(ctx)) {
			return "", errWorkspace
		}
		return g.home, nil
	}
	w, ok := g.cfg.Workspaces[name]
	if !ok || !w.allows(principalOf(ctx)) {
		return "", errWorkspace
	}
	return w.Root, nil
}

func (w Workspace) allows(principal string) bool {
	return len(w.Principals) == 0 || slices.Contains(w.Principals, principal)
}

// workspaceName is the name a session's workspace is shown by: clients
// see names, not the host's paths.
func (g *Gateway) workspaceName(root string) string {
	if root == g.home {
		return DefaultWorkspace
	}
	for name, w := range g.cfg.Workspaces {
		if w.Root == root {
			return name
		}
	}
	return ""
}
