package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/mcpserver"
	"github.com/talaria-agent/talaria/tool"
)

var mcpServeHelp = cmdHelp{
	name:  "mcp serve",
	usage: "[flags]",
	about: `Serves Talaria as an MCP server on stdin and stdout: the tools run_turn
(prompt, optional session_id: runs one durable turn, returns the answer and the
session id), list_sessions and get_session. Progress notifications follow a
running turn; the host's cancellation interrupts it. An MCP host cannot be
asked for approval, so tools that change things are refused (and the model
told why) unless --yes or approvals: auto. Logs go to stderr.`,
	examples: []string{
		`talaria mcp serve --workspace ~/src/project`,
		`talaria mcp serve --yes --sandbox workspace-write`,
	},
}

func (c *cli) mcpServe(ctx context.Context, args []string) int {
	return c.stdioServer(ctx, mcpServeHelp, args, c.serveMCP)
}

func (c *cli) serveMCP(ctx context.Context, rf *routeFlags) int {
	rf.quiet = true
	a, err := c.setup(ctx, rf, refuseForHost{}, 30*time.Second)
	if err != nil {
		return c.setupExit(err)
	}
	defer a.Close()
	srv := mcpserver.New(mcpserver.Options{Agent: a.agent, Store: a.store, Unattended: true,
		Version: versionString(), Logger: a.log})
	t := &sdk.IOTransport{Reader: io.NopCloser(c.stdin), Writer: nopWriteCloser{c.stdout}}
	if err := srv.Run(ctx, t); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return c.fail(exitOther, "mcp serve: %v", err)
	}
	return exitOK
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// refuseForHost is mcp serve's approver without --yes: an MCP host has no
// way to be asked, so the model hears plainly why the tool did not run.
type refuseForHost struct{}

func (refuseForHost) Approve(_ context.Context, call llm.ToolCall, _ tool.Info) (bool, string) {
	return false, fmt.Sprintf("Refused: %s changes things, and this Talaria MCP server only runs such tools when started with --yes (or approvals: auto in its config). Do not retry it; say what you would run and why.", call.Name)
}
