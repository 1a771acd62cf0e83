package gemini

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"math"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// sdkVersion is the google.golang.org/genai release whose request the
// client reproduces (user-agent and x-goog-api-client name it, as the SDK
// did when it sent the calls); the byte-identity tests compare the whole
// request, headers included, with that SDK's.
const sdkVersion = "1.77.0"

// client sends streamGenerateContent calls: the URL, headers and SSE
// framing the genai SDK used, without its auth stack (Google auth, gRPC,
// go-cmp), which a key-authenticated call does not need.
type client struct {
	base    *url.URL // server root ending in "/"
	key     string
	hc      *http.Client
	headers http.Header
}

func newClient(base, key string, hc *http.Client, headers http.Header) (*client, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("gemini base URL %q: %w", base, err)
	}
	h := headers.Clone()
	if h == nil {
		h = http.Header{}
	}
	ua := "google-genai-sdk/" + sdkVersion + " gl-go/" + runtime.Version()
	h.Add("user-agent", ua)
	h.Add("x-goog-api-client", ua)
	h.Set("Content-Type", "application/json")
	return &client{base: u, key: key, hc: hc, headers: h}, nil
}

// modelPath is the model's resource name as the SDK spelled it.
func modelPath(model string) (string, error) {
	if model == "" {
		return "", fmt.Errorf("%w: model is empty", errInvalid)
	}
	if strings.ContainsAny(model, "?&") || strings.Contains(model, "..") {
		return "", fmt.Errorf("%w: model %q is not a valid model name", errInvalid, model)
	}
	if strings.HasPrefix(model, "models/") || strings.HasPrefix(model, "tunedModels/") {
		return model, nil
	}
	return "models/" + model, nil
}

// httpError is a non-2xx answer: its status, headers and (capped) body.
type httpError struct {
	status int
	header http.Header
	body   []byte
}

func (e *httpError) Error() string {
	return fmt.Sprintf("gemini: HTTP %d: %s", e.status, errorMessage(e.body, nil))
}

// apiError is Gemini's error object ({"error":{…}}), as sent inside a 200
// stream.
type apiError struct {
	Code    int              `json:"code,omitempty"`
	Message string           `json:"message,omitempty"`
	Status  string           `json:"status,omitempty"`
	Details []map[string]any `json:"details,omitempty"`
}

func (e *apiError) Error() string {
	return fmt.Sprintf("Error %d, Message: %s, Status: %s, Details: %v", e.Code, e.Message, e.Status, e.Details)
}

// stream posts body and returns the answer's header and its chunks. A
// non-2xx answer is an *httpError; an error object inside the stream an
// *apiError.
func (c *client) stream(ctx context.Context, model, key string, body []byte) (http.Header, iter.Seq2[*response, error], error) {
	name, err := modelPath(model)
	if err != nil {
		return nil, nil, err
	}
	u := c.base.JoinPath("v1beta/" + name + ":streamGenerateContent")
	u.RawQuery = "alt=sse"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header = c.headers.Clone()
	if t := timeout(ctx, c.hc.Timeout); t > 0 {
		req.Header.Set("x-server-timeout", strconv.FormatInt(int64(math.Ceil(t.Seconds())), 10))
	}
	if key == "" {
		key = c.key
	}
	if key != "" {
		req.Header.Set("x-goog-api-key", key)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		_ = resp.Body.Close()
		return resp.Header, nil, &httpError{status: resp.StatusCode, header: resp.Header, body: b}
	}
	return resp.Header, chunks(resp.Body), nil
}

// timeout is what the SDK announced as x-server-timeout: the smaller of
// the client's timeout and the context's remaining time.
func timeout(ctx context.Context, client time.Duration) time.Duration {
	eff := client
	if d, ok := ctx.Deadline(); ok {
		if left := time.Until(d); left != 0 {
			if eff == 0 {
				eff = left
			} else {
				eff = min(eff, left)
			}
		}
	}
	return eff
}

// maxEvent caps one SSE event (a chunk with a large inline answer).
const maxEvent = 64 << 20

// chunks reads SSE events from body and decodes each data payload; it
// closes body when done.
func chunks(body io.ReadCloser) iter.Seq2[*response, error] {
	return func(yield func(*response, error) bool) {
		defer body.Close()
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 0, 4096), maxEvent)
		sc.Split(splitEvents)
		for sc.Scan() {
			data, ok, err := eventData(sc.Bytes())
			if err != nil {
				yield(nil, err)
				return
			}
			if !ok {
				continue
			}
			var chunk struct {
				response
				Error *apiError `json:"error"`
			}
			if err := json.Unmarshal(data, &chunk); err != nil {
				yield(nil, fmt.Errorf("gemini: undecodable stream chunk: %w", err))
				return
			}
			if chunk.Error != nil {
				yield(nil, chunk.Error)
				return
			}
			if !yield(&chunk.response, nil) {
				return
			}
		}
		if err := sc.Err(); err != nil {
			yield(nil, err)
		}
	}
}

// eventData joins an SSE event's data lines; comments and other fields
// are skipped. A line that is no SSE field but a JSON error object (some
// proxies answer so) is returned as an *apiError.
func eventData(ev []byte) ([]byte, bool, error) {
	var data []byte
	found := false
	for line := range bytes.SplitSeq(ev, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 || line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if found {
				data = append(data, '\n')
			}
			data = append(data, value...)
			found = true
		case "event", "id", "retry":
		default:
			var e struct {
				Error *apiError `json:"error"`
			}
			if json.Unmarshal(line, &e) == nil && e.Error != nil {
				return nil, false, e.Error
			}
			return nil, false, fmt.Errorf("gemini: invalid stream line %.200q", line)
		}
	}
	return data, found, nil
}

// splitEvents splits an SSE stream at blank lines (\n\n or \r\n\r\n).
func splitEvents(data []byte, atEOF bool) (int, []byte, error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	i, n := bytes.Index(data, []byte("\n\n")), 2
	if j := bytes.Index(data, []byte("\r\n\r\n")); j >= 0 && (i < 0 || j < i) {
		i, n = j, 4
	}
	if i >= 0 {
		return i + n, data[:i], nil
	}
	if atEOF {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// response is one streamed GenerateContentResponse (the fields read).
type response struct {
	ResponseID     string `json:"responseId"`
	ModelVersion   string `json:"modelVersion"`
	UsageMetadata  *usage `json:"usageMetadata"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	Candidates []struct {
		Content *struct {
			Parts []*part `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
}

type usage struct {
	PromptTokenCount        int32 `json:"promptTokenCount"`
	CachedContentTokenCount int32 `json:"cachedContentTokenCount"`
	CandidatesTokenCount    int32 `json:"candidatesTokenCount"`
	ThoughtsTokenCount      int32 `json:"thoughtsTokenCount"`
}

type part struct {
	Text             string `json:"text"`
	Thought          bool   `json:"thought"`
	ThoughtSignature []byte `json:"thoughtSignature"`
	FunctionCall     *struct {
		ID   string         `json:"id"`
		Name string         `json:"name"`
		Args map[string]any `json:"args"`
	} `json:"functionCall"`
}
