package compact

import "github.com/talaria-agent/talaria/llm"

// Accountant tracks the prompt size of a session's requests: the prompt
// tokens the provider reported for the last call, plus an estimate of what
// was added since. Provider counts are exact for the prefix they cover, so
// the estimate's error is confined to the few messages added since.
//
// The zero value is ready to use. An Accountant is not safe for concurrent
// use; it belongs to one turn's state.
type Accountant struct {
	valid    bool
	reported int64
	model    string
	// system is kept by reference: comparing the same string is a pointer
	// check, and a different one of equal length a memcmp.
	system string
	tools  int // EstimateTools of the observed request
	count  int // messages in the observed request
	last   uint64
}

// Observe records that request r was answered with usage u. A usage the
// provider did not measure (not reported, or without prompt tokens: "usage": {}) is ignored.
func (a *Accountant) Observe(r *llm.Request, u llm.Usage) {
	if r == nil || !u.Measured() {
		return
	}
	a.valid = true
	a.reported = u.PromptTokens()
	a.model = r.Model
	a.system = r.System
	a.tools = EstimateTools(r.Tools)
	a.count = len(r.Messages)
	a.last = 0
	if a.count > 0 {
		a.last = hashMessage(&r.Messages[a.count-1])
	}
}

// Estimate returns the expected prompt tokens of r. When r extends the last
// observed request (same model and system prompt, at least as many messages,
// and the last observed message unchanged at its position) it is the
// reported count plus estimates of the new messages and of any change in the
// tool definitions; otherwise it is EstimateRequest(r).
func (a *Accountant) Estimate(r *llm.Request) int {
	if r == nil {
		return 0
	}
	if !a.extends(r) {
		return EstimateRequest(r)
	}
	n := int(a.reported) + EstimateMessages(r.Messages[a.count:]) + EstimateTools(r.Tools) - a.tools
	if n < 0 {
		return 0
	}
	return n
}

func (a *Accountant) extends(r *llm.Request) bool {
	if !a.valid || r.Model != a.model || len(r.Messages) < a.count || r.System != a.system {
		return false
	}
	if a.count == 0 {
		return true
	}
	return hashMessage(&r.Messages[a.count-1]) == a.last
}

// Reset forgets the last observation; call it after compression or a model
// switch, when the reported count no longer describes the prefix.
func (a *Accountant) Reset() { *a = Accountant{} }

// LastReported returns the prompt tokens the provider reported for the last
// observed call (0 when none).
func (a *Accountant) LastReported() int64 { return a.reported }

// FNV-1a, inlined so hashing a message allocates nothing.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func hashString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	// A terminator keeps ("ab","c") and ("a","bc") apart.
	h ^= 0xff
	h *= fnvPrime
	return h
}

func hashInt(h uint64, v int) uint64 {
	for i := 0; i < 8; i++ {
		h ^= uint64(v>>(8*i)) & 0xff
		h *= fnvPrime
	}
	return h
}

func hashMessage(m *llm.Message) uint64 {
	h := uint64(fnvOffset)
	h = hashString(h, string(m.Role))
	h = hashInt(h, len(m.Content))
	for i := range m.Content {
		p := &m.Content[i]
		h = hashString(h, string(p.Type))
		h = hashString(h, p.Text)
		h = hashString(h, p.URL)
		h = hashInt(h, len(p.Data))
	}
	h = hashInt(h, len(m.ToolCalls))
	for i := range m.ToolCalls {
		c := &m.ToolCalls[i]
		h = hashString(h, c.ID)
		h = hashString(h, c.Name)
		h = hashString(h, c.Arguments)
	}
	h = hashString(h, m.ToolCallID)
	h = hashString(h, m.ToolName)
	if m.IsError {
		h = hashInt(h, 1)
	}
	if m.Reasoning != nil {
		h = hashString(h, m.Reasoning.Text)
	}
	return h
}
