// Package tool defines what a tool is, the registry that offers tools to the
// model, and validation of the model's arguments against each tool's schema.
package tool

import (
	"context"
	"encoding/json"

	"github.com/talaria-agent/talaria/llm"
)

// Info describes a tool.
type Info struct {
	Name        string
	Description string
	// Parameters is the JSON Schema (an object schema) of the arguments.
	Parameters json.RawMessage
	// ReadOnly tools change nothing: they never ask for approval and the
	// calls of one round run in parallel.
	ReadOnly bool
	// Repeatable tools (pollers: process status, "get result", "poll") are
	// expected to be called with the same arguments again and again; the
	// identical-call guard leaves them alone.
	Repeatable bool
	// AutoApprove tools change things but run without asking, because the
	// user said so for their source (an MCP server with approval: auto).
	// Unlike ReadOnly, their calls still run one at a time.
	AutoApprove bool
	// Idempotent tools change things, but running a call again with the
	// same arguments has the same effect as running it once (an MCP tool's
	// idempotentHint): a call cut off by its node's death is run again on
	// the node that continues the turn, as a read-only one is.
	Idempotent bool
}

// FileChanger is implemented by tools whose call changes one file named by
// its arguments (write_file, edit_file). The turn's ledger records that
// file's content hash before and after the call, so a call cut off by a
// crash can be told apart as done or not done.
type FileChanger interface {
	// ChangedFile is the absolute path a call with these validated
	// arguments changes; ok is false when it names none.
	ChangedFile(args json.RawMessage) (path string, ok bool)
}

// CallReader is implemented by a tool where some calls only read and others
// change things (the memory tool: "list" reads, "add" writes). Info's
// ReadOnly stays false; the calls ReadOnlyCall accepts (given validated
// arguments) run without asking for approval.
type CallReader interface {
	ReadOnlyCall(args json.RawMessage) bool
}

// Result is what a tool returns to the model.
type Result struct {
	Content string
	// IsError marks a failed call; the content says what went wrong.
	IsError bool
	// Images are image parts sent with the result where the provider
	// accepts images in tool results (Anthropic); Content must describe
	// them too, since other wire formats send the text only.
	Images []llm.Part
}

// Tool is something the model can call.
//
// Run receives arguments already validated against Info().Parameters. It must
// honour ctx: when ctx ends, stop and return promptly (kill child processes).
// A returned error becomes an error result whose text is err.Error(); it never
// ends the turn.
type Tool interface {
	Info() Info
	Run(ctx context.Context, args json.RawMessage) (Result, error)
}

// Errorf builds an error result.
func Errorf(format string, a ...any) Result {
	return Result{Content: sprintf(format, a...), IsError: true}
}
