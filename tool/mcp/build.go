package mcp

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/talaria-agent/talaria/tool"
)

// build fixes the session's tool list: server by server in name order,
// tool by tool in name order, so the same tool lists always give the same
// names and the same bytes.
func (s *Session) build(ctx context.Context, servers []*server, reserved []string) {
	taken := map[string]string{} // model name → "server/tool" holding it
	for _, r := range reserved {
		taken[r] = "built-in tool " + r
	}
	for _, srv := range servers {
		rep := srv.report()
		if rep.State != StateReady {
			s.reports = append(s.reports, rep)
			continue
		}
		remote := slices.Clone(srv.snapshot(ctx))
		slices.SortStableFunc(remote, func(a, b *mcpToolDef) int { return cmp.Compare(a.Name, b.Name) })
		for _, rt := range remote {
			if rt == nil {
				continue
			}
			if why := srv.cfg.filtered(rt.Name); why != "" {
				rep.Omitted = append(rep.Omitted, OmittedTool{Name: rt.Name, Reason: why})
				continue
			}
			params, fixes, err := fixSchema(rt.InputSchema)
			if err != nil {
				rep.Omitted = append(rep.Omitted, OmittedTool{Name: rt.Name, Reason: err.Error()})
				s.warnings = append(s.warnings, fmt.Sprintf("mcp: tool %s of server %s left out: %s", rt.Name, srv.cfg.Name, err))
				continue
			}
			base := modelName(srv.cfg.Name, rt.Name)
			name := unique(base, taken)
			if name != base {
				s.warnings = append(s.warnings, fmt.Sprintf("mcp: tool %s of server %s is offered as %s, because %s already names %s",
					rt.Name, srv.cfg.Name, name, base, taken[base]))
			}
			t := &mcpTool{srv: srv, remote: rt.Name, info: tool.Info{
				Name:        name,
				Description: description(srv.cfg.Name, rt),
				Parameters:  params,
				ReadOnly:    rt.Annotations != nil && rt.Annotations.ReadOnlyHint,
				AutoApprove: srv.cfg.AutoApprove,
				Idempotent:  rt.Annotations != nil && rt.Annotations.IdempotentHint,
			}}
			// The registry is the final judge of what providers accept.
			if err := new(tool.Registry).Register(t); err != nil {
				rep.Omitted = append(rep.Omitted, OmittedTool{Name: rt.Name, Reason: err.Error()})
				s.warnings = append(s.warnings, fmt.Sprintf("mcp: tool %s of server %s left out: %s", rt.Name, srv.cfg.Name, err))
				continue
			}
			if len(fixes) > 0 {
				srv.log().Info("mcp tool schema fixed up", "tool", rt.Name, "fixes", strings.Join(fixes, "; "))
			}
			taken[name] = srv.cfg.Name + "/" + rt.Name
			s.tools = append(s.tools, t)
			rep.Tools = append(rep.Tools, ToolReport{Name: rt.Name, ModelName: name, ReadOnly: t.info.ReadOnly})
		}
		s.reports = append(s.reports, rep)
	}
	slices.SortFunc(s.tools, func(a, b tool.Tool) int { return cmp.Compare(a.Info().Name, b.Info().Name) })
}

// filtered says why the config leaves a tool out, or "".
func (c ServerConfig) filtered(name string) string {
	for _, p := range c.Deny {
		if match(p, name) {
			return "denied by tools.deny"
		}
	}
	if len(c.Allow) == 0 {
		return ""
	}
	for _, p := range c.Allow {
		if match(p, name) {
			return ""
		}
	}
	return "not in tools.allow"
}

func match(pattern, name string) bool {
	if pattern == name {
		return true
	}
	ok, err := path.Match(pattern, name)
	return err == nil && ok
}

// maxName is what OpenAI and Anthropic accept for a function name.
const maxName = 64

// modelName is server__tool with every character outside [A-Za-z0-9_-]
// replaced by "_", cut to 64 bytes.
func modelName(server, name string) string {
	n := sanitize(server) + "__" + sanitize(name)
	if len(n) > maxName {
		n = n[:maxName]
	}
	return n
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
		if !ok {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}

// unique returns base, or base with the smallest free suffix _2, _3 …
// (cutting base to stay within 64 bytes).
func unique(base string, taken map[string]string) string {
	if _, ok := taken[base]; !ok {
		return base
	}
	for n := 2; ; n++ {
		suffix := fmt.Sprintf("_%d", n)
		b := base
		if len(b)+len(suffix) > maxName {
			b = b[:maxName-len(suffix)]
		}
		if _, ok := taken[b+suffix]; !ok {
			return b + suffix
		}
	}
}

func description(server string, t *mcpToolDef) string {
	d := strings.TrimSpace(t.Description)
	if d == "" && t.Annotations != nil {
		d = strings.TrimSpace(t.Annotations.Title)
	}
	if d == "" {
		d = strings.TrimSpace(t.Title)
	}
	if d == "" {
		d = "The " + t.Name + " tool"
	}
	return d + " (MCP server " + server + ")"
}
