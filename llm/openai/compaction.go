package openai

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/talaria-agent/talaria/llm"
)

// Native (server-side) compaction on the Responses API: opt-in, and sent
// only to the models and endpoints that support it, because others fail on
// the field without a structured rejection (HTTP 500, a stalled stream).
//
// The server answers with a "compaction" output item, an encrypted
// checkpoint of the history it pruned. It is kept in the assistant row's
// replay items and, on later calls, replaces everything before the message
// that carries it. Unlike reasoning items it is not pruned at the turn
// boundary.

// DefaultCompactionHosts are the endpoints that accept context_management.
var defaultCompactionHosts = []string{"api.openai.com"}

// compactionModels are the model families that accept it.
var compactionModels = []string{"gpt-5.4", "gpt-5.5", "gpt-5.6"}

type compactionOptions struct {
	on        bool
	threshold int
	hosts     []string
	base      string
}

// gated reports whether this request may carry context_management.
func (c compactionOptions) gated(model string) bool {
	if !c.on || c.threshold <= 0 {
		return false
	}
	u, err := url.Parse(c.base)
	if err != nil {
		return false
	}
	hosts := c.hosts
	if len(hosts) == 0 {
		hosts = defaultCompactionHosts
	}
	if !slices.Contains(hosts, u.Hostname()) {
		return false
	}
	for _, f := range compactionModels {
		if model == f || strings.HasPrefix(model, f+"-") {
			return true
		}
	}
	return false
}

type rsContextManagement struct {
	Type             string `json:"type"`
	CompactThreshold int    `json:"compact_threshold"`
}

// itemType reads an item's "type".
func itemType(raw json.RawMessage) string {
	var h struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(raw, &h)
	return h.Type
}

// latestCheckpoint finds the newest compaction item this model issued:
// the index of the message carrying it and the item, or -1.
func latestCheckpoint(msgs []llm.Message, model string) (int, json.RawMessage) {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role != llm.RoleAssistant || !m.Reasoning.IssuedBy(ResponsesAPI, model) {
			continue
		}
		for j := len(m.Reasoning.Items) - 1; j >= 0; j-- {
			if itemType(m.Reasoning.Items[j]) == "compaction" {
				return i, m.Reasoning.Items[j]
			}
		}
	}
	return -1, nil
}

// contextManagementRejected reports whether e is the structured rejection
// of the context_management field: a 400 that names the field and rejects
// it. A body that only echoes the request (a 5xx, a timeout page, another
// 400) names the field without rejecting it, and must not turn native
// compaction off.
func contextManagementRejected(e *llm.APIError) bool {
	if e == nil || e.StatusCode != 400 {
		return false
	}
	b := strings.ToLower(string(e.Body) + " " + e.Message)
	return strings.Contains(b, "context_management") &&
		containsAnyWord(b, "unknown", "unsupported", "not supported", "unrecognized", "unrecognised",
			"not allowed", "not permitted", "invalid", "unexpected", "extra inputs are not permitted")
}

func containsAnyWord(s string, subs ...string) bool {
	for _, w := range subs {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// maxRefusals bounds the sessions remembered as refusing native
// compaction; past it the oldest are forgotten (they retry once more).
const maxRefusals = 1024

// refusals is a bounded set of session names; the zero value is ready.
type refusals struct {
	mu    sync.Mutex
	set   map[string]bool
	order []string
}

func (r *refusals) has(session string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.set[session]
}

func (r *refusals) add(session string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.set == nil {
		r.set = map[string]bool{}
	}
	if r.set[session] {
		return
	}
	if len(r.order) >= maxRefusals {
		delete(r.set, r.order[0])
		r.order = r.order[1:]
	}
	r.set[session] = true
	r.order = append(r.order, session)
}
