package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/gateway/client"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// remoteClient is the client of `run --server` and `chat --server`; the
// token comes from TALARIA_TOKEN.
func (c *cli) remoteClient(server string) (*client.Client, error) {
	tok := strings.TrimSpace(c.getenv("TALARIA_TOKEN"))
	if tok == "" {
		return nil, &setupError{"--server needs a token: set TALARIA_TOKEN (create one with `talaria serve token create NAME` on the server)"}
	}
	if !strings.HasPrefix(server, "http://") && !strings.HasPrefix(server, "https://") {
		return nil, &setupError{fmt.Sprintf("--server %q: use a URL like http://127.0.0.1:7420", server)}
	}
	return &client.Client{BaseURL: server, Token: tok}, nil
}

// remoteExit maps a failure to reach or use the server to an exit code.
func (c *cli) remoteExit(err error) int {
	var se *setupError
	if errors.As(err, &se) {
		return c.fail(exitUsage, "%s", se.msg)
	}
	var ae *client.APIError
	if errors.As(err, &ae) {
		switch {
		case ae.Status == 401:
			return c.fail(exitAuth, "the server refused the token (TALARIA_TOKEN): %s", ae.Message)
		case ae.Code == api.CodeSessionBusy || ae.Code == api.CodeQueueFull:
			return c.fail(exitBusy, "%s", ae.Message)
		case ae.Status == 404 || ae.Status == 400:
			return c.fail(exitUsage, "%s", ae.Message)
		}
	}
	return c.fail(exitOther, "%v", err)
}

// runRemote is `talaria run --server`: the same output and exit codes as a
// local run.
func (c *cli) runRemote(ctx context.Context, server, prompt, sessionID, model string, cont, yes, jsonOut, quiet bool) int {
	cl, err := c.remoteClient(server)
	if err != nil {
		return c.remoteExit(err)
	}
	ctx, stop := interruptible(ctx)
	defer stop()
	sid, err := remoteSession(ctx, cl, sessionID, model, cont)
	if err != nil {
		return c.remoteExit(err)
	}
	var hooks turn.Hooks
	if !quiet {
		hooks = newProgress(c.stderr, nil).hooks()
	}
	var approver turn.Approver = refuseChanges{}
	if yes {
		approver = allowAll{}
	}
	res, err := cl.RunTurn(ctx, sid, prompt, hooks, approver)
	if err != nil && res.Exit == "" {
		return c.remoteExit(err)
	}
	if jsonOut {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
	} else if res.FinalText != "" {
		fmt.Fprintln(c.stdout, strings.TrimRight(res.FinalText, "\n"))
	}
	if !res.OK() && res.Explanation != "" {
		fmt.Fprintln(c.stderr, "talaria: "+res.Explanation)
	}
	if !quiet {
		fmt.Fprintln(c.stderr, summaryLine(&res))
	}
	return exitCode(&res)
}

// chatRemote is `talaria chat --server`.
func (c *cli) chatRemote(ctx context.Context, server, sessionID, model string, cont bool) int {
	cl, err := c.remoteClient(server)
	if err != nil {
		return c.remoteExit(err)
	}
	// As in local chat, a new session is created with the first message:
	// opening and leaving a chat leaves no empty session on the server.
	sid := sessionID
	if cont {
		if sid, err = cl.LatestSession(ctx); err != nil {
			return c.remoteExit(err)
		}
	}
	lines := readLines(c.stdin)
	ap := &askApprover{lines: lines, out: c.stdout, always: map[string]bool{}}
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	if sid != "" {
		fmt.Fprintf(c.stdout, "talaria chat — session %s on %s. /exit to quit.\n", sid, server)
	} else {
		fmt.Fprintf(c.stdout, "talaria chat — a new session on %s starts with your first message. /exit to quit.\n", server)
	}
	prompt := &chatPrompt{out: c.stdout, lines: lines, sig: sig}
	for {
		line, ok := prompt.next()
		if !ok {
			return exitOK
		}
		switch {
		case line == "/exit" || line == "/quit":
			return exitOK
		case sid == "" && (line == "/session" || line == "/usage"):
			fmt.Fprintln(c.stdout, "no session yet: it starts with your first message")
			continue
		case line == "/session":
			fmt.Fprintln(c.stdout, sid)
			continue
		case line == "/usage":
			var u struct {
				Usage client.Usage `json:"usage"`
			}
			if err := cl.Do(ctx, "GET", "/v1/sessions/"+sid+"/usage", nil, &u); err != nil {
				fmt.Fprintln(c.stderr, "talaria: "+err.Error())
			} else {
				fmt.Fprintln(c.stdout, remoteUsageText(sid, u.Usage))
			}
			continue
		case line == "/new":
			sid = ""
			fmt.Fprintln(c.stdout, "new session: it starts with your next message")
			continue
		}
		if sid == "" {
			s, err := cl.CreateSessionModel(ctx, model)
			if err != nil {
				fmt.Fprintln(c.stderr, "talaria: "+err.Error())
				continue
			}
			sid = s
		}
		if code, stop := c.remoteTurn(ctx, cl, sid, line, ap, sig, prompt); stop {
			return code
		}
	}
}

// remoteTurn runs one turn on the server, its progress on stderr; the first
// Ctrl+C stops the turn, a second quits (stop, with code).
func (c *cli) remoteTurn(ctx context.Context, cl *client.Client, sid, line string, ap *askApprover, sig <-chan os.Signal, prompt *chatPrompt) (code int, stop bool) {
	tctx, cancel := context.WithCancel(ctx)
	prog := newProgress(c.stderr, c.stdout)
	done := make(chan struct{})
	var res turn.Result
	var terr error
	go func() {
		defer close(done)
		res, terr = cl.RunTurn(tctx, sid, line, prog.hooks(), ap)
	}()
	quit := false
wait:
	for {
		select {
		case <-done:
			break wait
		case <-sig:
			if quit {
				cancel()
				return exitInterrupted, true
			}
			quit = true
			prompt.lastSig = time.Now()
			fmt.Fprintln(c.stderr, "\n· stopping the turn (Ctrl+C again to quit)")
			cancel()
		}
	}
	cancel()
	prog.mu.Lock()
	prog.endLine()
	prog.mu.Unlock()
	if terr != nil && res.Exit == "" {
		fmt.Fprintln(c.stderr, "talaria: "+terr.Error())
		return 0, false
	}
	if !res.OK() && res.Explanation != "" {
		fmt.Fprintln(c.stderr, "talaria: "+res.Explanation)
	}
	fmt.Fprintln(c.stderr, summaryLine(&res))
	return 0, false
}

// remoteUsageText words a server session's usage as local chat's /usage
// does.
func remoteUsageText(sid string, v client.Usage) string {
	u := llm.Usage{InputTokens: v.InputTokens, OutputTokens: v.OutputTokens, CacheReadTokens: v.CacheReadTokens,
		CacheWriteTokens: v.CacheWriteTokens, ReasoningTokens: v.ReasoningTokens}
	var b strings.Builder
	fmt.Fprintf(&b, "session %s: %d API calls\n", sid, v.APICalls)
	fmt.Fprintf(&b, "tokens: %d input (%d cache read, %d cache write), %d output",
		u.PromptTokens(), u.CacheReadTokens, u.CacheWriteTokens, u.OutputTokens)
	if v.CostUSD > 0 {
		fmt.Fprintf(&b, "\ncost: $%.4f", v.CostUSD)
	}
	return b.String()
}

// allowAll approves every call (run --yes against a server that asks).
type allowAll struct{}

func (allowAll) Approve(context.Context, llm.ToolCall, tool.Info) (bool, string) { return true, "" }

// remoteSession picks the server session a remote run or chat talks to:
// the one named, the newest (-c), or a new one (on model, "" = the
// server's default).
func remoteSession(ctx context.Context, cl *client.Client, sessionID, model string, cont bool) (string, error) {
	switch {
	case sessionID != "":
		return sessionID, nil
	case cont:
		return cl.LatestSession(ctx)
	default:
		return cl.CreateSessionModel(ctx, model)
	}
}

// remoteFlags refuses the one-run flags a --server run or chat cannot
// honour, instead of ignoring them: the server's operator chooses
// providers, endpoints, workspaces and the database, and its API has no
// per-turn iteration limit. --model travels with a new session only.
func remoteFlags(fs *flag.FlagSet, existingSession bool) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if err != nil {
			return
		}
		switch f.Name {
		case "provider", "api", "base-url", "api-key-env":
			err = fmt.Errorf("--%s cannot be used with --server: the server's operator configures its providers and endpoints (and keys never leave this machine); leave it out, or run without --server", f.Name)
		case "workspace":
			err = fmt.Errorf("--workspace cannot be used with --server: the server works in the workspaces its operator configured, not in a directory of this machine; leave it out, or run without --server")
		case "database":
			err = fmt.Errorf("--database cannot be used with --server: the server keeps its own database; leave it out, or run without --server")
		case "max-iterations":
			err = fmt.Errorf("--max-iterations cannot be used with --server: the server's API has no per-turn limit, its max_iterations applies; leave it out, or run without --server")
		case "model":
			if existingSession {
				err = fmt.Errorf("--model with --server applies to a new session only (a server session keeps its model); leave out --session/--continue, or --model")
			}
		}
	})
	return err
}
