package gemini

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/internal/accum"
	"github.com/talaria-agent/talaria/llm/internal/netclass"
)

// assembler turns streamed GenerateContentResponse chunks into llm events
// and the final response. It does no I/O.
type assembler struct {
	s         accum.Stream
	reqModel  string
	sigs      []json.RawMessage
	rawFinish string
	finish    llm.FinishReason
	blocked   bool
}

func (a *assembler) feed(r *response) []llm.Event {
	a.s.Begin()
	if r == nil {
		return nil
	}
	a.s.Identify(r.ResponseID, r.ModelVersion)
	if u := r.UsageMetadata; u != nil {
		// candidatesTokenCount leaves the thoughts out.
		a.s.SetUsage(int64(u.PromptTokenCount), int64(u.CachedContentTokenCount),
			int64(u.CandidatesTokenCount+u.ThoughtsTokenCount), int64(u.ThoughtsTokenCount))
	}
	if pf := r.PromptFeedback; pf != nil && pf.BlockReason != "" {
		// The prompt itself was blocked: no candidates will come.
		a.blocked = true
		a.finish, a.rawFinish = llm.FinishContentFilter, "prompt_blocked:"+pf.BlockReason
		return a.s.Events()
	}
	if len(r.Candidates) == 0 {
		return a.s.Events()
	}
	c := r.Candidates[0]
	if c.Content != nil {
		for _, p := range c.Content.Parts {
			a.part(p)
		}
	}
	if c.FinishReason != "" && c.FinishReason != "FINISH_REASON_UNSPECIFIED" {
		a.s.Flush()
		a.rawFinish = c.FinishReason
		a.finish = mapFinish(c.FinishReason)
	}
	return a.s.Events()
}

func (a *assembler) part(p *part) {
	if p == nil {
		return
	}
	switch {
	case p.Thought:
		a.s.Reasoning(p.Text)
	case p.FunctionCall != nil:
		fc := p.FunctionCall
		idx := len(a.s.Calls())
		args := "{}"
		if len(fc.Args) > 0 {
			if b, err := json.Marshal(fc.Args); err == nil {
				args = string(b)
			}
		}
		id := fc.ID
		if id == "" {
			id = newCallID(a.s.ID, idx)
		}
		a.s.Args(a.s.NewCall(id, fc.Name), args) // a call comes whole
		if len(p.ThoughtSignature) > 0 {
			a.keepSig(sigRef{On: "call", Index: idx, Signature: p.ThoughtSignature})
		}
	default:
		a.s.Text(p.Text)
		if len(p.ThoughtSignature) > 0 {
			a.keepSig(sigRef{On: "text", Signature: p.ThoughtSignature})
		}
	}
}

func (a *assembler) keepSig(ref sigRef) {
	if b, err := json.Marshal(ref); err == nil {
		a.sigs = append(a.sigs, b)
	}
}

// newCallID names a call Gemini gave no id: the response id and position
// keep it unique within a session; without a response id, random bytes do.
func newCallID(respID string, idx int) string {
	if respID == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		respID = hex.EncodeToString(b[:])
	}
	return fmt.Sprintf("call_%s_%d", respID, idx)
}

func (a *assembler) finished() bool { return a.blocked || a.rawFinish != "" }

func (a *assembler) response() *llm.Response {
	msg, reasoning := a.s.Message("{}")
	if reasoning != "" || len(a.sigs) > 0 {
		msg.Reasoning = &llm.Reasoning{Text: reasoning, Items: a.sigs, API: API, Model: a.reqModel}
	}
	finish := a.finish
	if finish == llm.FinishStop && len(msg.ToolCalls) > 0 {
		finish = llm.FinishToolCalls
	}
	return a.s.Response(msg, finish, a.rawFinish)
}

func mapFinish(f string) llm.FinishReason {
	switch f {
	case "STOP":
		return llm.FinishStop
	case "MAX_TOKENS":
		return llm.FinishLength
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY":
		return llm.FinishContentFilter
	}
	return llm.FinishUnknown
}

// newError starts every APIError of the adapter: who failed, over which
// wire format, at which endpoint.
func (p *Provider) newError(model string, cause error) *llm.APIError {
	return &llm.APIError{Provider: p.name, Model: model, API: API, BaseURL: p.baseURL, Err: cause}
}

// streamError builds the APIError for a failed call: an HTTP error, an
// error object inside the stream, or a connection failure; header is the
// answer's (nil when none came) and started says the 200 stream had
// begun. The caller's ctx wins.
func (p *Provider) streamError(ctx context.Context, model string, header http.Header, started bool, a *assembler, err error) *llm.APIError {
	e := p.newError(model, err)
	e.PartialText = a.s.PartialText()
	var he *httpError
	var ae *apiError
	switch {
	case ctx.Err() != nil:
		e.Message = ctx.Err().Error()
		e.Transport = llm.TransportCanceled
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			e.Transport = llm.TransportTimeout
		}
		e.MidStream = started
	case errors.As(err, &he):
		e.StatusCode, e.Header, e.Body = he.status, he.header, he.body
		e.Message = errorMessage(he.body, err)
	case errors.As(err, &ae):
		// An error object inside a 200 stream.
		e.MidStream = true
		e.StatusCode = ae.Code
		e.Header = header
		body, _ := json.Marshal(map[string]any{"error": ae})
		e.Body = body
		e.Message = ae.Message
	case errors.Is(err, errInvalid):
		e.Message = err.Error()
	default:
		e.Message = err.Error()
		e.Transport = netclass.Classify(err)
		if e.Transport == llm.TransportNone {
			e.Transport = llm.TransportEOF
		}
		e.MidStream = started
	}
	return e
}

// errorMessage is the provider's message from an error body: an object or
// a list of objects ({"error":{"message":…}}), else the body itself, else
// err's text.
func errorMessage(body []byte, err error) string {
	type wrapped struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	var one wrapped
	if json.Unmarshal(body, &one) == nil && one.Error.Message != "" {
		return one.Error.Message
	}
	var list []wrapped
	if json.Unmarshal(body, &list) == nil && len(list) > 0 && list[0].Error.Message != "" {
		return list[0].Error.Message
	}
	if t := strings.TrimSpace(string(body[:min(len(body), 512)])); t != "" {
		return t
	}
	if err == nil {
		return "no error message"
	}
	return err.Error()
}
