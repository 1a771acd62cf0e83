package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/tool"
)

type mcpToolDef = sdk.Tool

// mcpTool is one server tool offered under its model name.
type mcpTool struct {
	srv    *server
	remote string // the tool's name on the server
	info   tool.Info
}

func (t *mcpTool) Info() tool.Info { return t.info }

// Run calls the tool. Faults never return an error to the engine: they are
// error results the model can read, so the turn goes on.
func (t *mcpTool) Run(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	res, err := t.srv.call(ctx, t.remote, args)
	if err != nil {
		return tool.Result{Content: "[error: " + err.Error() + "]", IsError: true}, nil
	}
	return convert(t.srv.cfg.Name, t.remote, res), nil
}

// maxText bounds the text of one result, as the built-in tools do: a
// server that returns megabytes would otherwise fill the context.
const maxText = 100_000

// convert maps an MCP result onto a tool result: text as text; images as
// image parts plus a line describing each (for wire formats without
// images in tool results); resource links and embedded resources as
// lines; structured content as compact JSON unless a text part already
// carries exactly that JSON; isError as an error result.
func convert(server, name string, res *sdk.CallToolResult) tool.Result {
	var b strings.Builder
	var out tool.Result
	line := func(s string) {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	structured := ""
	if res.StructuredContent != nil {
		if raw, err := json.Marshal(res.StructuredContent); err == nil {
			structured = compactJSON(raw)
		}
	}
	sawStructured := false
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			if structured != "" && compactJSON([]byte(c.Text)) == structured {
				sawStructured = true
			}
			line(c.Text)
		case *sdk.ImageContent:
			line(fmt.Sprintf("[image: %s, %s]", orUnknown(c.MIMEType), size(len(c.Data))))
			out.Images = append(out.Images, llm.Part{Type: llm.PartImage, MediaType: c.MIMEType, Data: c.Data})
		case *sdk.AudioContent:
			line(fmt.Sprintf("[audio: %s, %s; audio is not passed to the model]", orUnknown(c.MIMEType), size(len(c.Data))))
		case *sdk.ResourceLink:
			s := "[resource link: " + c.URI
			if c.Name != "" {
				s += " (" + c.Name + ")"
			}
			if c.MIMEType != "" {
				s += ", " + c.MIMEType
			}
			if c.Description != "" {
				s += ": " + c.Description
			}
			line(s + "]")
		case *sdk.EmbeddedResource:
			r := c.Resource
			if r == nil {
				continue
			}
			if r.Text != "" {
				line(fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text))
			} else {
				line(fmt.Sprintf("[resource %s: %s, %s]", r.URI, orUnknown(r.MIMEType), size(len(r.Blob))))
			}
		default:
			line("[unsupported content]")
		}
	}
	if structured != "" && !sawStructured {
		line("structured content: " + structured)
	}
	text := b.String()
	if len(text) > maxText {
		text = text[:maxText] + fmt.Sprintf("\n[output cut at %d of %d bytes]", maxText, len(b.String()))
	}
	if strings.TrimSpace(text) == "" {
		text = "(no output)"
		if res.IsError {
			text = fmt.Sprintf("the MCP tool %s of server %s reported an error without a message", name, server)
		}
	}
	out.Content = text
	out.IsError = res.IsError
	return out
}

func compactJSON(raw []byte) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return ""
	}
	out, err := json.Marshal(v) // sorted keys, so equal values compare equal
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(out))
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown type"
	}
	return s
}

func size(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
