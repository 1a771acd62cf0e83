// Command talaria runs tool-using LLM agents whose turns are durable,
// bounded and explainable.
package main

import (
	"context"
	"fmt"
	root "github.com/talaria-agent/talaria/app"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/talaria-agent/talaria/tool/sandbox"
	"github.com/talaria-agent/talaria/tool/sandbox/egress"
	"github.com/talaria-agent/talaria/turn"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = "dev"

// Exit codes. Each family of outcome has its own so scripts can branch.
const (
	exitOK          = 0   // the turn completed
	exitOther       = 1   // another failure (storage, internal error, empty answers)
	exitUsage       = 2   // bad flags, arguments or configuration
	exitAuth        = 3   // authentication or billing: fix the key or the account
	exitRateLimit   = 4   // rate limited or overloaded: retry later
	exitContext     = 5   // the conversation does not fit the model's context
	exitBadRequest  = 6   // the provider rejected the request (format, policy, unknown model)
	exitLimit       = 7   // stopped by a limit: iteration budget or tool-loop guard
	exitBusy        = 8   // the session is busy with another turn
	exitInterrupted = 130 // interrupted (Ctrl+C)
)

const usage = `talaria — durable, bounded, explainable agent turns

Usage:
  talaria run [flags] "prompt"     run one turn; the answer goes to stdout, progress to stderr
  talaria chat [flags]             interactive session (Ctrl+C stops a turn, twice quits)
  talaria demo [--api anthropic]   a real multi-tool turn against the built-in scripted model server
  talaria sessions <list|show|search|delete|compact> ...
  talaria memory <list|add|rm|clear>   the workspace's durable memory
  talaria explain-error [flags]    explain a provider error and what Talaria would do about it
  talaria trace SESSION [--turn N] a turn's timeline: calls, retries, waits, tools, compressions, guards, costs
  talaria doctor                   check configuration, keys, the database and MCP servers
  talaria mcp <list|test> ...      MCP servers: their state and tools
  talaria mcp serve                Talaria as an MCP server on stdio (tools run_turn, list_sessions, get_session)
  talaria acp                      Agent Client Protocol on stdio, for editors (Zed, JetBrains, Neovim, ...)
  talaria serve [flags]            HTTP API, event streams and web page (talaria serve token ...)
  talaria keys status|reset [P]    show or lift the cooldowns of benched API keys
  talaria db migrate --from sqlite://PATH --to postgres://…   copy a SQLite database into PostgreSQL
  talaria version

Run 'talaria <command> -h' for a command's flags.

Configuration: ~/.talaria/config.yaml (TALARIA_HOME moves the directory). With no file,
OPENAI_API_KEY or ANTHROPIC_API_KEY is enough.

Exit codes: 0 completed, 1 other failure, 2 usage/config error, 3 auth/billing,
4 rate limit/overload, 5 context too long, 6 request rejected, 7 stopped by a limit,
8 session busy, 130 interrupted.
`

func main() {
	// The relay inside a sandbox with a host list: before anything else,
	// it runs for every shell call.
	if len(os.Args) > 1 && os.Args[1] == sandbox.RelayCommand {
		os.Exit(egress.RelayMain(os.Args[2:]))
	}
	// Packages that log through slog's default logger (key cooldowns, for
	// one) must not print timestamped lines around the one-line error a
	// command promises; the commands' own logger honours log_level.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	c := newCLI(os.Stdin, os.Stdout, os.Stderr, os.Getenv, isTerminal(os.Stdout), isTerminal(os.Stderr))
	// The GC memory limit is process-wide: only the real process follows
	// the live heap, never a command run in-process by a test.
	c.memory = memoryObserverFor(os.Args[1:], os.Getenv)
	os.Exit(c.dispatch(context.Background(), os.Args[1:]))
}

// cli carries a command's environment so commands can run in-process in tests.
type cli struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	// rawStderr is stderr without the terminal filter, for the progress
	// display's own in-place line; errTTY says stderr is a terminal.
	rawStderr io.Writer
	errTTY    bool
	// lastError is the last one-line error fail printed, for --json.
	lastError string
	// clients are the providers' shared HTTP clients.
	clients root.Clients
	// memory, when set, joins the turns' observers (memoryObserver).
	memory turn.Observer
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return newCLI(stdin, stdout, stderr, getenv, isTerminal(stdout), isTerminal(stderr)).dispatch(ctx, args)
}

// newCLI filters control sequences out of whichever of stdout and stderr is
// a terminal (outTTY, errTTY): text from files, tools and the model must not
// retitle, clear or hijack it.
func newCLI(stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string, outTTY, errTTY bool) *cli {
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv, rawStderr: stderr, errTTY: errTTY}
	if outTTY {
		c.stdout = newTermWriter(stdout)
	}
	if errTTY {
		c.stderr = newTermWriter(stderr)
	}
	return c
}

func (c *cli) dispatch(ctx context.Context, args []string) int {
	stdout, stderr := c.stdout, c.stderr
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	commands := map[string]func(context.Context, []string) int{
		"run": c.runCmd, "chat": c.chatCmd, "demo": c.demoCmd,
		"sessions": c.sessionsCmd, "session": c.sessionsCmd, "memory": c.memoryCmd, "db": c.dbCmd,
		"explain-error": c.explainCmd, "trace": c.traceCmd, "doctor": c.doctorCmd,
		"mcp": c.mcpCmd, "serve": c.serveCmd, "keys": c.keysCmd, "acp": c.acpCmd,
	}
	if fn, ok := commands[cmd]; ok {
		return fn(ctx, rest)
	}
	switch cmd {
	case "version", "--version", "-v":
		if wantsHelp(args[1:]) {
			fmt.Fprint(stdout, "Usage: talaria version\n\nPrints the version of this binary (also --version, -v).\n")
			return exitOK
		}
		fmt.Fprintf(stdout, "talaria %s\n", versionString())
		return exitOK
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "talaria: unknown command %q\n\n%s", cmd, usage)
	return exitUsage
}

// fail prints a one-line error and returns code.
func (c *cli) fail(code int, format string, a ...any) int {
	msg := strings.TrimRight(fmt.Sprintf(format, a...), "\n")
	c.lastError = msg
	fmt.Fprintln(c.stderr, "talaria: "+msg)
	return code
}

// exitMeanings says what each exit code means, for people (talaria --help)
// and scripts (the error object of --json).
var exitMeanings = map[int]string{
	exitOK:          "completed",
	exitOther:       "another failure (storage, internal error, empty answers)",
	exitUsage:       "bad flags, arguments or configuration",
	exitAuth:        "authentication or billing: fix the key or the account",
	exitRateLimit:   "rate limited or overloaded: retry later",
	exitContext:     "the conversation does not fit the model's context",
	exitBadRequest:  "the provider rejected the request",
	exitLimit:       "stopped by a limit: the iteration budget or the tool-loop guard",
	exitBusy:        "the session is busy with another turn",
	exitInterrupted: "interrupted",
}

// jsonError is what a --json command prints on stdout when it fails before
// it has a result: scripts always get one JSON document.
type jsonError struct {
	Error       string `json:"error"`
	ExitCode    int    `json:"exit_code"`
	ExitMeaning string `json:"exit_meaning"`
}

func (c *cli) printJSONError(code int) {
	_ = c.printJSON(jsonError{Error: c.lastError, ExitCode: code, ExitMeaning: exitMeanings[code]})
}
