// Package catalogue knows the models: each one's context window, output cap
// and list prices, found by name however a provider spells it (routing
// prefixes, dates, tags, family prefixes), with the configuration's
// per-model overrides applied. It is data and matching only; the engine
// (package turn) and compression (package compact) read it.
package catalogue

import (
	"sort"
	"strings"

	"github.com/talaria-agent/talaria/internal/setting"
	"github.com/talaria-agent/talaria/llm"
)

// UnknownWindow is the context window assumed for a model the catalogue does
// not know. 32K is the smallest window among current mainstream chat models
// (Qwen3 dense models natively, many local servers' configured context), so
// guessing it errs towards compressing early rather than overflowing; a real
// overflow is still caught by the retry loop, and config overrides can raise it.
const UnknownWindow = 32768

// UnknownMaxOutput is the output cap assumed for an unknown model: 4K is what
// every current chat model and local server accepts.
const UnknownMaxOutput = 4096

// Model is what the engine needs to know about one model.
type Model struct {
	// Model is the catalogue entry that matched (the name asked for when
	// nothing matched).
	Model string
	// Window is the context window in tokens: the most prompt tokens the
	// model accepts. Some providers count the output against it too.
	Window int
	// MaxOutput is the most output tokens one call may ask for.
	MaxOutput int
	// InputPerMTok is the USD price of one million uncached input tokens.
	InputPerMTok float64
	// OutputPerMTok is the USD price of one million output tokens.
	OutputPerMTok float64
	// CacheReadPerMTok is the USD price of one million prompt tokens read
	// from the prompt cache; 0 means no known discount (input rate applies).
	CacheReadPerMTok float64
	// CacheWritePerMTok is the USD price of one million prompt tokens written
	// to the prompt cache; 0 means no write premium (input rate applies).
	CacheWritePerMTok float64
	// CacheWrite1hPerMTok is the USD price of one million prompt tokens
	// written to a 1-hour cache tier; 0 means twice the input rate where the
	// model has a write premium (Anthropic: 1h writes cost 2× input, 5m
	// writes 1.25×), else the 5-minute write rate.
	CacheWrite1hPerMTok float64
	// Known is false when the model is not in the catalogue and conservative
	// defaults (UnknownWindow, UnknownMaxOutput) were applied.
	Known bool
	// PriceKnown is false when the price is unknown (open-weight models whose
	// price depends on the host, local models, unknown models).
	PriceKnown bool
	// CompressionRatio and CompressionTokens, when either is set (config
	// models.NAME.compression_threshold and compression_threshold_tokens),
	// are this model's compression trigger in place of the global one
	// (compact.Threshold.For).
	CompressionRatio  float64
	CompressionTokens int
}

// Cost prices a usage: uncached input, cache reads, cache writes and output,
// each at its rate. ok is false when the price is unknown.
func (m Model) Cost(u llm.Usage) (usd float64, ok bool) {
	if !m.PriceKnown {
		return 0, false
	}
	read, write := m.CacheReadPerMTok, m.CacheWritePerMTok
	if read == 0 {
		read = m.InputPerMTok
	}
	if write == 0 {
		write = m.InputPerMTok
	}
	write1h := m.CacheWrite1hPerMTok
	if write1h == 0 {
		write1h = write
		if m.CacheWritePerMTok > 0 {
			write1h = 2 * m.InputPerMTok
		}
	}
	// The 1-hour part of the writes is priced at its own tier's rate.
	h := min(max(u.CacheWrite1hTokens, 0), u.CacheWriteTokens)
	usd = float64(u.InputTokens)*m.InputPerMTok +
		float64(u.CacheReadTokens)*read +
		float64(u.CacheWriteTokens-h)*write +
		float64(h)*write1h +
		float64(u.OutputTokens)*m.OutputPerMTok
	return usd / 1e6, true
}

// Catalogue answers what a model's window, output cap and prices are. It is
// immutable after New and safe for concurrent use; a nil *Catalogue is the
// built-in one.
type Catalogue struct {
	models map[string]Model
	// byLength lists the keys of models, longest first, for family matching.
	byLength []string
}

// New builds the built-in catalogue with overrides applied. An
// override's non-zero fields replace those of the entry its name resolves to
// (by the same matching as Lookup); an override for an unknown model makes it
// Known, with UnknownWindow/UnknownMaxOutput where it sets none. Setting any
// price, or PriceKnown, marks the price known (so a free local model can be
// declared with PriceKnown and zero prices).
func New(overrides map[string]Model) *Catalogue {
	c := &Catalogue{models: make(map[string]Model, 128)}
	for _, m := range builtinModels() {
		m.Known = true
		c.models[m.Model] = m
	}
	c.index()
	// Overrides resolve against the built-in table only, in a fixed order, so
	// the result never depends on map iteration.
	names := make([]string, 0, len(overrides))
	for name := range overrides {
		names = append(names, name)
	}
	sort.Strings(names)
	merged := make(map[string]Model, len(names))
	for _, name := range names {
		key := strings.ToLower(strings.TrimSpace(name))
		if key == "" {
			continue
		}
		merged[key] = applyOverride(c.Lookup(key), key, overrides[name])
	}
	if len(merged) > 0 {
		for k, m := range merged {
			c.models[k] = m
		}
		c.index()
	}
	return c
}

func (c *Catalogue) index() {
	c.byLength = c.byLength[:0]
	for k := range c.models {
		c.byLength = append(c.byLength, k)
	}
	sort.Slice(c.byLength, func(i, j int) bool {
		a, b := c.byLength[i], c.byLength[j]
		if len(a) != len(b) {
			return len(a) > len(b)
		}
		return a < b
	})
}

func applyOverride(base Model, key string, o Model) Model {
	m := base
	m.Model = key
	m.Known = true
	m.Window = setting.Or(o.Window, m.Window)
	m.MaxOutput = setting.Or(o.MaxOutput, m.MaxOutput)
	m.InputPerMTok = setting.Or(o.InputPerMTok, m.InputPerMTok)
	m.OutputPerMTok = setting.Or(o.OutputPerMTok, m.OutputPerMTok)
	m.CacheReadPerMTok = setting.Or(o.CacheReadPerMTok, m.CacheReadPerMTok)
	m.CacheWritePerMTok = setting.Or(o.CacheWritePerMTok, m.CacheWritePerMTok)
	if o.PriceKnown || o.InputPerMTok > 0 || o.OutputPerMTok > 0 {
		m.PriceKnown = true
	}
	if o.CompressionRatio != 0 || o.CompressionTokens != 0 {
		m.CompressionRatio, m.CompressionTokens = o.CompressionRatio, o.CompressionTokens
	}
	return m
}

// Lookup finds a model by name, case-insensitively: the exact name; then with
// a provider prefix stripped ("openai/gpt-4o", "anthropic/claude-sonnet-4.5",
// "us.anthropic.claude-…"); then with date/version/tag suffixes stripped
// ("-20250929", "-2024-08-06", "-2411", "@20250929", ":free", "-latest");
// then the longest known family prefix ("gpt-4o-audio-preview" → gpt-4o).
// OpenRouter's dotted Claude versions ("claude-3.5-sonnet") match the hyphen
// spelling. Unknown models get Known=false and UnknownWindow.
func (c *Catalogue) Lookup(model string) Model {
	if c == nil {
		c = New(nil)
	}
	name := strings.ToLower(strings.TrimSpace(model))
	if name != "" {
		if m, ok := c.match(name); ok {
			return m
		}
	}
	return Model{Model: model, Window: UnknownWindow, MaxOutput: UnknownMaxOutput}
}

func (c *Catalogue) match(name string) (Model, bool) {
	if m, ok := c.exact(name); ok {
		return m, true
	}
	name = stripProvider(name)
	if m, ok := c.exact(name); ok {
		return m, true
	}
	for {
		shorter, ok := stripSuffix(name)
		if !ok {
			break
		}
		name = shorter
		if m, ok := c.exact(name); ok {
			return m, true
		}
	}
	// The hyphenated spelling may reach a longer (more specific) entry:
	// "claude-sonnet-4.5-x" is Sonnet 4.5, not the "claude-sonnet-4" family.
	k1 := c.family(name)
	k2 := c.family(dotsToHyphens(name))
	if len(k2) > len(k1) {
		k1 = k2
	}
	if k1 == "" {
		return Model{}, false
	}
	return c.models[k1], true
}

// exact tries name and its hyphenated spelling.
func (c *Catalogue) exact(name string) (Model, bool) {
	if m, ok := c.models[name]; ok {
		return m, true
	}
	if alt := dotsToHyphens(name); alt != name {
		m, ok := c.models[alt]
		return m, ok
	}
	return Model{}, false
}

// family returns the key that is the longest prefix of name ending
// at a separator, so "o3" matches "o3-high" but "gpt-5" never "gpt-50".
func (c *Catalogue) family(name string) string {
	for _, k := range c.byLength {
		if len(k) < len(name) && strings.HasPrefix(name, k) && isSeparator(name[len(k)]) {
			return k
		}
	}
	return ""
}
