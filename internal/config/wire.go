package config

import (
	"fmt"
	"slices"
	"strings"
)

// The wire formats a provider entry may speak (providers.NAME.api).
const (
	APIOpenAI          = "openai"           // Chat Completions, any compatible server
	APIOpenAIResponses = "openai-responses" // OpenAI Responses (reasoning items replayed)
	APIAnthropic       = "anthropic"        // Anthropic Messages (extended thinking)
	APIGemini          = "gemini"           // Gemini streamGenerateContent (SSE)
)

// APIs lists every wire format, for help texts and validation.
func APIs() []string { return []string{APIOpenAI, APIOpenAIResponses, APIAnthropic, APIGemini} }

// ValidAPI reports whether api names a wire format.
func ValidAPI(api string) bool { return slices.Contains(APIs(), api) }

// APIChoice is the list for error messages: "openai, openai-responses, ...".
func APIChoice() string { return strings.Join(APIs(), ", ") }

// Thinking turns on a model's extended thinking (anthropic: budget_tokens;
// gemini: thinkingBudget).
type Thinking struct {
	BudgetTokens int `yaml:"budget_tokens"`
}

// Reasoning configures OpenAI Responses reasoning (api: openai-responses).
type Reasoning struct {
	// Effort is reasoning.effort ("minimal", "low", "medium", "high"); empty
	// leaves the model's default.
	Effort string `yaml:"effort"`
	// Summary is reasoning.summary ("auto", "concise", "detailed");
	// default "auto".
	Summary string `yaml:"summary"`
	// Replay, when false, is the kill switch: encrypted reasoning items are
	// neither requested nor replayed (default true).
	Replay *bool `yaml:"replay"`
}

// ReplayOn reports whether reasoning replay is on (the default).
func (r Reasoning) ReplayOn() bool { return r.Replay == nil || *r.Replay }

// validateWire checks one provider entry's wire settings.
func validateWire(name string, p Provider) error {
	if !ValidAPI(p.API) {
		return fmt.Errorf("providers.%s.api is %q; use one of %s", name, p.API, APIChoice())
	}
	if p.Thinking != nil && p.Thinking.BudgetTokens != 0 && p.Thinking.BudgetTokens < 1024 {
		return fmt.Errorf("providers.%s.thinking.budget_tokens is %d; the minimum is 1024", name, p.Thinking.BudgetTokens)
	}
	switch {
	case p.CacheTTL != "" && p.CacheTTL != "5m" && p.CacheTTL != "1h":
		return fmt.Errorf("providers.%s.cache_ttl is %q; use 5m or 1h", name, p.CacheTTL)
	case p.CacheTTL != "" && p.API != APIAnthropic:
		return fmt.Errorf("providers.%s.cache_ttl: only the anthropic wire format has cache tiers (this entry's api is %s)", name, p.API)
	}
	switch p.Reasoning.Effort {
	case "", "minimal", "low", "medium", "high":
	default:
		return fmt.Errorf("providers.%s.reasoning.effort is %q; use minimal, low, medium or high", name, p.Reasoning.Effort)
	}
	switch p.Reasoning.Summary {
	case "", "auto", "concise", "detailed", "none":
	default:
		return fmt.Errorf("providers.%s.reasoning.summary is %q; use auto, concise, detailed or none", name, p.Reasoning.Summary)
	}
	return nil
}

// ThinkingBudget is the thinking budget for model on provider p: the
// model's entry (models.MODEL.thinking) wins over the provider's; 0 is off.
func (c *Config) ThinkingBudget(p Provider, model string) int {
	if m, ok := c.Models[model]; ok && m.Thinking != nil {
		return m.Thinking.BudgetTokens
	}
	if p.Thinking != nil {
		return p.Thinking.BudgetTokens
	}
	return 0
}
