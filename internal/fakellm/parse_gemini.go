package fakellm

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// APIGemini names the Gemini generateContent route in Request.API.
const APIGemini = "gemini"

// Messages after the real Gemini API's wording.
const (
	gmCountMismatch = "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn."
	gmOrder         = "Please ensure that function response turn comes immediately after a function call turn. And the number of function response parts should be equal to number of function call parts of the function call turn."
	gmMissingSig    = "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:%s` , position %d. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
	gmCorruptSig    = "Corrupted thought signature."
	gmSkipSig       = "skip_thought_signature_validator"
	// gmSkipSigStd is the same bytes in standard base64, which clients
	// holding the signature as bytes send; proto JSON accepts both.
	gmSkipSigStd = "skip/thought/signature/validator"
)

type gmBody struct {
	Contents          []gmContent `json:"contents"`
	SystemInstruction *gmContent  `json:"systemInstruction"`
	Tools             []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig *struct {
		MaxOutputTokens int `json:"maxOutputTokens"`
		ThinkingConfig  *struct {
			IncludeThoughts bool `json:"includeThoughts"`
			ThinkingBudget  *int `json:"thinkingBudget"`
		} `json:"thinkingConfig"`
	} `json:"generationConfig"`
}

type gmContent struct {
	Role  string   `json:"role,omitempty"`
	Parts []gmPart `json:"parts"`
}

type gmPart struct {
	Text             *string         `json:"text,omitempty"`
	Thought          bool            `json:"thought,omitempty"`
	ThoughtSignature string          `json:"thoughtSignature,omitempty"`
	FunctionCall     *gmFunctionCall `json:"functionCall,omitempty"`
	FunctionResponse *gmFunctionResp `json:"functionResponse,omitempty"`
	InlineData       *struct {
		MimeType string `json:"mimeType"`
		Data     string `json:"data"`
	} `json:"inlineData,omitempty"`
}

type gmFunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type gmFunctionResp struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

// gmModelOf reads the model and method from /v1beta/models/MODEL:METHOD.
func gmModelOf(path string) (model, method string) {
	rest, ok := strings.CutPrefix(path, "/v1beta/models/")
	if !ok {
		return "", ""
	}
	model, method, _ = strings.Cut(rest, ":")
	return model, method
}

// gmSignature is the thought signature this server issues on the first
// function call of a model turn: bound to the server's key, the model and
// the call's name.
func gmSignature(epoch int, model, name string) string {
	return base64.StdEncoding.EncodeToString([]byte("fakellm-thought-signature:" + strconv.Itoa(epoch) + "\x00" + model + "\x00" + name))
}

// parseGemini fills req from its Body and returns the first rule broken.
func parseGemini(req *Request) *ErrorReply {
	var v *ErrorReply
	bad := func(msg string) {
		if v == nil {
			v = &ErrorReply{Status: http.StatusBadRequest, Type: "INVALID_ARGUMENT", Message: msg}
		}
	}
	model, method := gmModelOf(req.Path)
	req.Model, req.Stream = model, method == "streamGenerateContent"
	req.IncludeUsage = true
	if !validUTF8(req.Body) {
		bad("Invalid JSON payload received. Invalid UTF-8.")
		return v
	}
	var b gmBody
	if err := json.Unmarshal(req.Body, &b); err != nil {
		bad(fmt.Sprintf("Invalid JSON payload received. %v", err))
		return v
	}
	if si := b.SystemInstruction; si != nil {
		req.System = gmText(si.Parts)
	}
	for _, t := range b.Tools {
		for _, f := range t.FunctionDeclarations {
			req.Tools = append(req.Tools, f.Name)
		}
	}
	if g := b.GenerationConfig; g != nil {
		req.MaxTokens = g.MaxOutputTokens
		if tc := g.ThinkingConfig; tc != nil && tc.ThinkingBudget != nil {
			req.ThinkingBudget = *tc.ThinkingBudget
		}
	}
	if len(b.Contents) == 0 {
		bad("* GenerateContentRequest.contents: contents is not specified")
		return v
	}
	if e := normalizeGemini(req, b.Contents); e != "" {
		bad(e)
	}
	return v
}

// normalizeGemini builds req.Messages and checks function call pairing and
// thought signatures; it returns the first broken rule's message.
func normalizeGemini(req *Request, contents []gmContent) string {
	first := ""
	keep := func(format string, a ...any) {
		if first == "" {
			first = fmt.Sprintf(format, a...)
		}
	}
	// The current turn starts after the last user content that is not
	// only function responses; its model turns must carry signatures.
	turnStart := 0
	for i, c := range contents {
		if c.Role == "user" && !gmOnlyResponses(c.Parts) {
			turnStart = i + 1
		}
	}
	var pending []string // names of the previous model turn's calls
	// pendingIDs name those calls in the normalized view: Gemini has no
	// call ids and matches responses by position, and so does the view.
	var pendingIDs []string
	n := 0
	for i, c := range contents {
		switch c.Role {
		case "user", "":
			var responses []string
			var user *Msg
			for _, p := range c.Parts {
				if fr := p.FunctionResponse; fr != nil {
					id := fr.Name
					if k := len(responses); k < len(pendingIDs) {
						id = pendingIDs[k]
					}
					responses = append(responses, fr.Name)
					req.Messages = append(req.Messages, Msg{Role: "tool", Text: gmResponseText(fr.Response), ToolCallID: id})
					continue
				}
				if user == nil {
					user = &Msg{Role: "user"}
				}
				if p.Text != nil {
					user.Text += *p.Text
				}
			}
			if user != nil {
				req.Messages = append(req.Messages, *user)
			}
			switch {
			case len(pending) > 0 && len(responses) != len(pending):
				keep(gmCountMismatch)
			case len(pending) == 0 && len(responses) > 0:
				keep(gmOrder)
			default:
				for k := range responses {
					if responses[k] != pending[k] {
						keep(gmOrder)
					}
				}
			}
			pending, pendingIDs = nil, nil
		case "model":
			if len(pending) > 0 {
				keep(gmCountMismatch)
			}
			pending, pendingIDs = nil, nil
			m := Msg{Role: "assistant"}
			firstCall := true
			for _, p := range c.Parts {
				switch {
				case p.FunctionCall != nil:
					n++
					args := string(p.FunctionCall.Args)
					id := p.FunctionCall.ID
					if id == "" {
						id = p.FunctionCall.Name + "#" + strconv.Itoa(n)
					}
					m.ToolCalls = append(m.ToolCalls, Call{ID: id, Name: p.FunctionCall.Name, Arguments: args})
					pending = append(pending, p.FunctionCall.Name)
					pendingIDs = append(pendingIDs, id)
					if p.ThoughtSignature != "" {
						m.Signatures = append(m.Signatures, p.ThoughtSignature)
					}
					if firstCall && i >= turnStart {
						switch sig := p.ThoughtSignature; {
						case sig == "":
							keep(gmMissingSig, p.FunctionCall.Name, n)
						case sig != gmSkipSig && sig != gmSkipSigStd && sig != gmSignature(req.epoch, req.Model, p.FunctionCall.Name):
							keep(gmCorruptSig)
						}
					}
					firstCall = false
				case p.Thought:
					if p.Text != nil {
						m.Reasoning += *p.Text
					}
				case p.Text != nil:
					m.Text += *p.Text
				}
			}
			req.Messages = append(req.Messages, m)
		default:
			keep("Please use a valid role: user, model.")
		}
	}
	if len(pending) > 0 {
		// A trailing call turn is a prefill the real API also refuses.
		keep(gmCountMismatch)
	}
	return first
}

func gmOnlyResponses(parts []gmPart) bool {
	if len(parts) == 0 {
		return false
	}
	for _, p := range parts {
		if p.FunctionResponse == nil {
			return false
		}
	}
	return true
}

func gmText(parts []gmPart) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Text != nil && !p.Thought {
			b.WriteString(*p.Text)
		}
	}
	return b.String()
}

// gmResponseText is a function response's "output" (or "error", or the
// whole object).
func gmResponseText(raw json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil {
		for _, k := range []string{"output", "error", "result"} {
			if s := rawString(m[k]); s != "" {
				return s
			}
		}
	}
	return string(raw)
}
