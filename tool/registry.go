package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/talaria-agent/talaria/llm"
)

// emptyObjectSchema stands in for a tool that declares no parameters.
const emptyObjectSchema = `{"type":"object","properties":{}}`

// Registry holds the tools offered to the model, in registration order. It
// is safe for concurrent use, since tools may join later (MCP servers); the
// zero value is an empty registry ready to use.
type Registry struct {
	mu     sync.RWMutex
	byName map[string]*entry
	order  []string
}

// entry is a registered tool with everything derived from its Info computed
// once, so that Specs is cheap and byte-stable.
type entry struct {
	tool     Tool
	info     Info // Parameters compacted
	schema   *schema
	expected string
}

// NewRegistry registers tools in order. It reports every bad tool (joined),
// not just the first, and returns no registry when any is bad.
func NewRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{byName: make(map[string]*entry, len(tools))}
	var errs []error
	for _, t := range tools {
		if err := r.Register(t); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return r, nil
}

// Register adds a tool. Its Info is read once, here: a tool's name, schema
// and description must not change afterwards, because the request prefix
// sent to the provider has to stay byte-identical across calls.
func (r *Registry) Register(t Tool) error {
	if t == nil {
		return errors.New("register: nil tool")
	}
	info := t.Info()
	if !validName(info.Name) {
		return fmt.Errorf("register %q: %w: must match ^[a-zA-Z0-9_-]{1,64}$", info.Name, ErrInvalidName)
	}
	params := bytes.TrimSpace(info.Parameters)
	if len(params) == 0 {
		params = []byte(emptyObjectSchema)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, params); err != nil {
		return fmt.Errorf("register %q: %w: not valid JSON: %w", info.Name, ErrInvalidSchema, err)
	}
	s, err := parseRootSchema(compact.Bytes())
	if err != nil {
		return fmt.Errorf("register %q: %w: %w", info.Name, ErrInvalidSchema, err)
	}
	info.Parameters = json.RawMessage(compact.Bytes())
	e := &entry{tool: t, info: info, schema: s, expected: s.expected()}

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byName == nil {
		r.byName = make(map[string]*entry)
	}
	if _, dup := r.byName[info.Name]; dup {
		return fmt.Errorf("register %q: %w", info.Name, ErrDuplicateName)
	}
	r.byName[info.Name] = e
	r.order = append(r.order, info.Name)
	return nil
}

// validName reports whether name matches ^[a-zA-Z0-9_-]{1,64}$.
func validName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// Get returns the named tool.
func (r *Registry) Get(name string) (Tool, bool) {
	e := r.lookup(name)
	if e == nil {
		return nil, false
	}
	return e.tool, true
}

// Info returns the named tool's Info as registered (Parameters compacted).
func (r *Registry) Info(name string) (Info, bool) {
	e := r.lookup(name)
	if e == nil {
		return Info{}, false
	}
	info := e.info
	info.Parameters = slices.Clone(e.info.Parameters)
	return info, true
}

// Names returns the tool names in registration order.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.order)
}

// Specs returns the tools as offered to the model, in registration order.
// The same registry yields identical bytes on every call, which keeps the
// provider's prompt cache warm. The returned slice is the caller's to keep.
func (r *Registry) Specs() []llm.ToolSpec {
	r.mu.RLock()
	defer r.mu.RUnlock()
	specs := make([]llm.ToolSpec, 0, len(r.order))
	for _, name := range r.order {
		e := r.byName[name]
		specs = append(specs, llm.ToolSpec{
			Name:        e.info.Name,
			Description: e.info.Description,
			Parameters:  slices.Clone(e.info.Parameters),
		})
	}
	return specs
}

func (r *Registry) lookup(name string) *entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byName[name]
}
