package gemini

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/internal/toolcache"
	"github.com/talaria-agent/talaria/llm/internal/wire"
	"github.com/talaria-agent/talaria/llm/internal/wiresize"
)

var (
	errInvalid  = errors.New("invalid request")
	errNoFinish = errors.New("stream ended without a finishReason: unexpected EOF")
)

// skipSignature is Google's documented stand-in for a thought signature on
// function calls that the model did not produce (history from another
// provider): base64 of these bytes is "skip/thought/signature/validator",
// the validator's skip value (proto JSON reads base64 and base64url alike).
var skipSignature, _ = base64.URLEncoding.DecodeString("skip_thought_signature_validator")

// sigRef locates a stored thought signature on a model turn's parts.
type sigRef struct {
	On        string `json:"on"` // "call" or "text"
	Index     int    `json:"index"`
	Signature []byte `json:"thought_signature"`
}

// The request body is built by the adapter, not by the genai SDK, so that
// each content's bytes can be kept and reused by the next call (see
// encodeIncremental); the SDK still sends it (URL, headers, streaming,
// errors: see Provider.Stream). The bytes are exactly the SDK's for the
// same request, which the tests check against the SDK itself: the SDK
// turns its structs into maps and encodes them with encoding/json's
// defaults, so every object here declares its fields in sorted key order,
// every value is encoded with json.Marshal (HTML characters escaped),
// invalid UTF-8 in a string becomes U+FFFD as the SDK's round trip makes
// it (see validUTF8), and numbers are what a float64 prints.

type wireContent struct {
	Parts []*wirePart `json:"parts,omitempty"`
	Role  string      `json:"role,omitempty"`
}

type wirePart struct {
	FileData         *wireFileData         `json:"fileData,omitempty"`
	FunctionCall     *wireFunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *wireFunctionResponse `json:"functionResponse,omitempty"`
	InlineData       *wireBlob             `json:"inlineData,omitempty"`
	Text             string                `json:"text,omitempty"`
	ThoughtSignature []byte                `json:"thoughtSignature,omitempty"`
}

type wireFileData struct {
	FileURI string `json:"fileUri,omitempty"`
}

type wireBlob struct {
	Data     []byte `json:"data,omitempty"`
	MIMEType string `json:"mimeType,omitempty"`
}

// wireFunctionCall carries no id: Talaria's call ids are not Gemini's.
type wireFunctionCall struct {
	Args map[string]any `json:"args,omitempty"`
	Name string         `json:"name,omitempty"`
}

// wireFunctionResponse carries no id either: the wire matches responses
// to calls by name and order.
type wireFunctionResponse struct {
	Name     string         `json:"name,omitempty"`
	Response map[string]any `json:"response,omitempty"`
}

type wireConfig struct {
	MaxOutputTokens int32               `json:"maxOutputTokens,omitempty"`
	Temperature     *float64            `json:"temperature,omitempty"`
	ThinkingConfig  *wireThinkingConfig `json:"thinkingConfig,omitempty"`
}

type wireThinkingConfig struct {
	IncludeThoughts bool  `json:"includeThoughts,omitempty"`
	ThinkingBudget  int32 `json:"thinkingBudget"`
}

type wireTool struct {
	FunctionDeclarations []wireFunctionDecl `json:"functionDeclarations,omitempty"`
}

type wireFunctionDecl struct {
	Description string `json:"description,omitempty"`
	Name        string `json:"name,omitempty"`
	// ParametersJSONSchema is the schema decoded, as the SDK's maps hold
	// it (keys sorted, numbers float64).
	ParametersJSONSchema any `json:"parametersJsonSchema,omitempty"`
}

// contentsKey opens the body: "contents" sorts before every other member
// the adapter sends.
const contentsKey = `{"contents":[`

// encodeRequest is the whole body of req: contents, generation config,
// system instruction and tools (from tc, encoded once while the list is
// unchanged; nil encodes them every time).
func encodeRequest(req *llm.Request, budget int, tc *toolcache.Cache) ([]byte, error) {
	tail, err := encodeTail(req, budget, tc)
	if err != nil {
		return nil, err
	}
	w := contentWriter{body: append(wire.Grow(nil, len(contentsKey)+wiresize.Messages(req.Messages)+len(tail)), contentsKey...), reserve: len(tail)}
	if err := buildContents(req.Messages, 0, len(req.Messages), req.Model, w.add); err != nil {
		return nil, err
	}
	return finishBody(w.body, w.items, tail), nil
}

// contentWriter appends contents to a body as the items of its contents
// array, encoded as encodeValue does through one reused buffer.
type contentWriter struct {
	body    []byte
	items   int // items in body
	reserve int // bytes to keep free after the last item (the tail)
	buf     bytes.Buffer
	enc     *json.Encoder
}

func (w *contentWriter) add(c *wireContent) error {
	if w.enc == nil {
		w.enc = json.NewEncoder(&w.buf) // HTML escaped, as the SDK's
	}
	w.buf.Reset()
	if err := w.enc.Encode(c); err != nil {
		return fmt.Errorf("%w: encoding: %w", errInvalid, err)
	}
	w.body = wire.AppendItem(w.body, bytes.TrimSuffix(w.buf.Bytes(), []byte("\n")), w.items, w.reserve)
	w.items++
	return nil
}

// finishBody closes a body of items contents with tail (encodeTail). With
// no contents the SDK sends no "contents" member at all.
func finishBody(body []byte, items int, tail []byte) []byte {
	if items == 0 {
		// tail is `],"generationConfig":…`: drop the bracket and comma
		// (into a new slice: body may be a cached buffer).
		return append([]byte{'{'}, tail[2:]...)
	}
	return append(wire.Grow(body, len(tail)), tail...)
}

// encodeTail is what follows the contents: `],"generationConfig":{…}`,
// the system instruction (Request.System, then the text of system
// messages, in order) and the tools, `}` and the newline the SDK's
// encoder ends the body with.
func encodeTail(req *llm.Request, budget int, tc *toolcache.Cache) ([]byte, error) {
	var cfg wireConfig
	if req.MaxTokens > 0 {
		cfg.MaxOutputTokens = int32(req.MaxTokens)
	}
	if t := req.Temperature; t != nil {
		// The SDK sends a float32, which reaches the body through its
		// shortest decimal read back as a float64.
		f, err := strconv.ParseFloat(strconv.FormatFloat(float64(float32(*t)), 'g', -1, 32), 64)
		if err != nil {
			return nil, fmt.Errorf("%w: temperature %v", errInvalid, *t)
		}
		cfg.Temperature = &f
	}
	if budget > 0 {
		cfg.ThinkingConfig = &wireThinkingConfig{IncludeThoughts: true, ThinkingBudget: int32(budget)}
	}
	tail := []byte(`],"generationConfig":`)
	b, err := encodeValue(cfg)
	if err != nil {
		return nil, err
	}
	tail = append(tail, b...)
	var system []*wirePart
	if req.System != "" {
		system = append(system, &wirePart{Text: validUTF8(req.System)})
	}
	for i := range req.Messages {
		if m := &req.Messages[i]; m.Role == llm.RoleSystem {
			if t := m.Text(); t != "" {
				system = append(system, &wirePart{Text: validUTF8(t)})
			}
		}
	}
	if len(system) > 0 {
		// The SDK gives a system instruction without a role the user role.
		b, err := encodeValue(&wireContent{Parts: system, Role: "user"})
		if err != nil {
			return nil, err
		}
		tail = append(append(tail, `,"systemInstruction":`...), b...)
	}
	tools, err := encodedTools(tc, req.Tools)
	if err != nil {
		return nil, err
	}
	return append(append(tail, tools...), "}\n"...), nil
}

// encodedTools is the tools member (`,"tools":[…]`, nothing for no tools),
// from tc while the list is unchanged.
func encodedTools(tc *toolcache.Cache, specs []llm.ToolSpec) ([]byte, error) {
	return tc.Encoded(specs, func(specs []llm.ToolSpec) ([]byte, error) {
		if len(specs) == 0 {
			return nil, nil
		}
		decls := make([]wireFunctionDecl, 0, len(specs))
		for _, t := range specs {
			params := bytes.TrimSpace(t.Parameters)
			switch {
			case len(params) == 0 || string(params) == "null":
				params = []byte(`{"type":"object","properties":{}}`)
			case !json.Valid(params):
				return nil, fmt.Errorf("%w: tool %q: parameters are not valid JSON", errInvalid, t.Name)
			}
			var schema any
			if err := json.Unmarshal(params, &schema); err != nil {
				return nil, fmt.Errorf("%w: tool %q: %w", errInvalid, t.Name, err)
			}
			decls = append(decls, wireFunctionDecl{Name: validUTF8(t.Name), Description: validUTF8(t.Description), ParametersJSONSchema: schema})
		}
		b, err := encodeValue([]wireTool{{FunctionDeclarations: decls}})
		if err != nil {
			return nil, err
		}
		return append([]byte(`,"tools":`), b...), nil
	})
}

// encodeValue is v as the SDK's encoder writes it (HTML escaped), without
// its newline.
func encodeValue(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: encoding: %w", errInvalid, err)
	}
	return b, nil
}

// validUTF8 replaces every byte of s that is not UTF-8 with U+FFFD, as the
// SDK's encode and decode round trip does: encoding/json writes such a
// byte as the escape \ufffd, which reads back as the character itself.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b)
}

// buildContents maps msgs[from:to] onto Gemini contents, passing each to
// emit as it is complete. Consecutive user and tool messages become one
// user turn, function responses first, in the order of the calls they
// answer (Gemini matches them by name and position); assistant messages
// become model turns with their signatures; system messages go to the
// system instruction (encodeTail). from must be 0 or an assistant
// message's index, so that the contents built from there are the ones the
// whole list would give; msgs[:from] is read only for the name of a tool
// result that does not carry it.
func buildContents(msgs []llm.Message, from, to int, model string, emit func(*wireContent) error) error {
	type response struct {
		id   string
		part *wirePart
	}
	var responses []response
	var others []*wirePart
	var lastCalls []llm.ToolCall
	flushUser := func() error {
		if len(responses)+len(others) == 0 {
			return nil
		}
		// Responses in the order of the calls they answer (tools may
		// finish, and be stored, in another order); responses to unknown
		// calls keep their place at the end.
		parts := make([]*wirePart, 0, len(responses)+len(others))
		used := make([]bool, len(responses))
		for _, c := range lastCalls {
			for j, r := range responses {
				if !used[j] && r.id == c.ID {
					parts = append(parts, r.part)
					used[j] = true
					break
				}
			}
		}
		for j, r := range responses {
			if !used[j] {
				parts = append(parts, r.part)
			}
		}
		parts = append(parts, others...)
		responses, others = nil, nil
		return emit(&wireContent{Parts: parts, Role: "user"})
	}
	for i := from; i < to; i++ {
		m := &msgs[i]
		switch m.Role {
		case llm.RoleUser:
			others = appendUserParts(others, m.Content)
		case llm.RoleTool:
			name := m.ToolName
			if name == "" {
				name = callName(msgs[:i], m.ToolCallID)
			}
			key := "output"
			if m.IsError {
				key = "error"
			}
			responses = append(responses, response{id: m.ToolCallID, part: &wirePart{FunctionResponse: &wireFunctionResponse{
				Name: validUTF8(name), Response: map[string]any{key: validUTF8(m.Text())},
			}}})
		case llm.RoleAssistant:
			if err := flushUser(); err != nil {
				return err
			}
			lastCalls = m.ToolCalls
			if parts := modelParts(m, model); len(parts) > 0 {
				if err := emit(&wireContent{Parts: parts, Role: "model"}); err != nil {
					return err
				}
			}
		}
	}
	return flushUser()
}

// callName is the tool name of call id: from the newest assistant message
// of msgs that made it, "" when none did.
func callName(msgs []llm.Message, id string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != llm.RoleAssistant {
			continue
		}
		for _, c := range msgs[i].ToolCalls {
			if c.ID == id {
				return c.Name
			}
		}
	}
	return ""
}

// modelParts replays an assistant message: text, then function calls, each
// with the signature it was issued with when Gemini issued it for this
// model. A call turn without one gets the skip value; the API requires it
// only in the current turn, but sending it on every such turn keeps the
// bytes of a turn the same before and after the next user message, so the
// prompt cache prefix survives.
func modelParts(m *llm.Message, model string) []*wirePart {
	var parts []*wirePart
	var textPart *wirePart
	if t := m.Text(); t != "" {
		textPart = &wirePart{Text: validUTF8(t)}
		parts = append(parts, textPart)
	}
	calls := make([]*wirePart, 0, len(m.ToolCalls))
	for _, c := range m.ToolCalls {
		var args map[string]any
		if json.Unmarshal(c.ArgumentsJSON(), &args) != nil || args == nil {
			args = map[string]any{}
		}
		p := &wirePart{FunctionCall: &wireFunctionCall{Name: validUTF8(c.Name), Args: args}}
		calls = append(calls, p)
		parts = append(parts, p)
	}
	if r := m.Reasoning; r.IssuedBy(API, model) {
		for _, raw := range r.Items {
			var ref sigRef
			if json.Unmarshal(raw, &ref) != nil {
				continue
			}
			switch {
			case ref.On == "call" && ref.Index >= 0 && ref.Index < len(calls):
				calls[ref.Index].ThoughtSignature = ref.Signature
			case ref.On == "text" && textPart != nil:
				textPart.ThoughtSignature = ref.Signature
			}
		}
	}
	if len(calls) > 0 && calls[0].ThoughtSignature == nil {
		calls[0].ThoughtSignature = skipSignature
	}
	return parts
}

// appendUserParts maps user content; empty text is dropped (the API
// rejects it).
func appendUserParts(out []*wirePart, content []llm.Part) []*wirePart {
	for _, p := range content {
		switch p.Type {
		case llm.PartText:
			if p.Text != "" {
				out = append(out, &wirePart{Text: validUTF8(p.Text)})
			}
		case llm.PartImage:
			switch {
			case len(p.Data) > 0:
				mt := p.MediaType
				if mt == "" {
					mt = "image/png"
				}
				out = append(out, &wirePart{InlineData: &wireBlob{MIMEType: validUTF8(mt), Data: p.Data}})
			case p.URL != "":
				out = append(out, &wirePart{FileData: &wireFileData{FileURI: validUTF8(p.URL)}})
			}
		}
	}
	return out
}
