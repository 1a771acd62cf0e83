package catalogue

import (
	"math"
	"testing"

	"github.com/talaria-agent/talaria/llm"
)

func TestLookup(t *testing.T) {
	cat := New(nil)
	tests := []struct {
		name       string
		model      string
		want       string // matched entry
		known      bool
		priceKnown bool
		window     int
	}{
		{"exact", "gpt-4o", "gpt-4o", true, true, 128000},
		{"case-insensitive", "GPT-4o", "gpt-4o", true, true, 128000},
		{"exact anthropic", "claude-sonnet-4-5", "claude-sonnet-4-5", true, true, 200000},
		{"provider prefix", "openai/gpt-4o", "gpt-4o", true, true, 128000},
		{"openrouter hyphen", "anthropic/claude-sonnet-4-5", "claude-sonnet-4-5", true, true, 200000},
		{"openrouter dotted", "anthropic/claude-sonnet-4.5", "claude-sonnet-4-5", true, true, 200000},
		{"openrouter old dotted", "openrouter/anthropic/claude-3.5-sonnet", "claude-3-5-sonnet", true, true, 200000},
		{"openrouter variant tag", "anthropic/claude-3.7-sonnet:thinking", "claude-3-7-sonnet", true, true, 200000},
		{"dated anthropic", "claude-sonnet-4-5-20250929", "claude-sonnet-4-5", true, true, 200000},
		{"dated opus 4", "claude-opus-4-20250514", "claude-opus-4", true, true, 200000},
		{"dated opus 4.1", "claude-opus-4-1-20250805", "claude-opus-4-1", true, true, 200000},
		{"dated openai", "gpt-4o-2024-08-06", "gpt-4o", true, true, 128000},
		{"dated gpt-5.4 mini", "gpt-5.4-mini-2026-03-17", "gpt-5.4-mini", true, true, 400000},
		{"vertex date", "claude-sonnet-4-5@20250929", "claude-sonnet-4-5", true, true, 200000},
		{"bedrock", "us.anthropic.claude-3-7-sonnet-20250219-v1:0", "claude-3-7-sonnet", true, true, 200000},
		{"mistral dated exact", "mistral-large-2411", "mistral-large-2411", true, true, 131072},
		{"mistral YYMM stripped", "mistral-large-2512", "mistral-large", true, true, 262144},
		{"latest suffix", "mistral-small-latest", "mistral-small", true, true, 131072},
		{"chat latest", "gpt-5-chat-latest", "gpt-5-chat", true, true, 128000},
		{"family", "gpt-4o-audio-preview", "gpt-4o", true, true, 128000},
		{"longest family", "gpt-4o-mini-search-preview", "gpt-4o-mini", true, true, 128000},
		{"family o-series", "o4-mini-deep-research", "o4-mini", true, true, 200000},
		{"family dotted version", "gpt-5.1-codex-max", "gpt-5.1", true, true, 272000},
		{"gemini preview", "gemini-2.5-flash-lite-preview-09-2025", "gemini-2.5-flash-lite", true, true, 1048576},
		{"gemini models/ prefix", "models/gemini-2.5-pro", "gemini-2.5-pro", true, true, 1048576},
		{"deepseek prefixed", "deepseek/deepseek-chat", "deepseek-chat", true, true, 131072},
		{"ollama tag", "qwen3:8b", "qwen3", true, false, 32768},
		{"hf qwen coder", "Qwen/Qwen3-Coder-480B-A35B-Instruct", "qwen3-coder", true, false, 262144},
		{"qwen dotted family", "qwen3.5-plus", "qwen3", true, false, 32768},
		{"openrouter qwen 2.5", "qwen/qwen-2.5-coder-32b-instruct", "qwen-2.5-coder", true, false, 32768},
		{"hf llama", "meta-llama/Llama-3.3-70B-Instruct", "llama-3.3", true, false, 131072},
		{"together llama", "meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo", "meta-llama-3.1", true, false, 131072},
		{"ollama llama", "llama3.1:70b", "llama3.1", true, false, 131072},
		{"llama 4", "meta-llama/llama-4-scout-17b-16e-instruct", "llama-4", true, false, 131072},
		{"codestral dated exact", "codestral-2405", "codestral-2405", true, true, 32000},
		{"prefix needs a separator", "gpt-50", "gpt-50", false, false, UnknownWindow},
		{"unknown", "my-local-model", "my-local-model", false, false, UnknownWindow},
		{"empty", "", "", false, false, UnknownWindow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cat.Lookup(tt.model)
			if got.Model != tt.want || got.Known != tt.known || got.PriceKnown != tt.priceKnown || got.Window != tt.window {
				t.Fatalf("Lookup(%q) = {Model:%q Known:%v PriceKnown:%v Window:%d}, want {%q %v %v %d}",
					tt.model, got.Model, got.Known, got.PriceKnown, got.Window, tt.want, tt.known, tt.priceKnown, tt.window)
			}
			if got.MaxOutput <= 0 {
				t.Fatalf("MaxOutput = %d, want > 0", got.MaxOutput)
			}
			if !got.Known && got.MaxOutput != UnknownMaxOutput {
				t.Fatalf("unknown MaxOutput = %d, want %d", got.MaxOutput, UnknownMaxOutput)
			}
		})
	}
}

func TestBuiltinTableSane(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range builtinModels() {
		if seen[m.Model] {
			t.Errorf("duplicate entry %q", m.Model)
		}
		seen[m.Model] = true
		if m.Window < 8192 || m.MaxOutput <= 0 || m.MaxOutput > m.Window {
			t.Errorf("%s: window %d, max output %d", m.Model, m.Window, m.MaxOutput)
		}
		if m.PriceKnown && (m.InputPerMTok <= 0 || m.OutputPerMTok <= 0) {
			t.Errorf("%s: priced with zero rates", m.Model)
		}
		// Every entry must be reachable by its own name.
		if got := New(nil).Lookup(m.Model).Model; got != m.Model {
			t.Errorf("Lookup(%q) matched %q", m.Model, got)
		}
	}
}

func TestCatalogueOverrides(t *testing.T) {
	cat := New(map[string]Model{
		"gpt-4o":                   {Window: 64000},
		"My-Local":                 {Window: 65536},
		"local-free":               {PriceKnown: true, Window: 8192},
		"openrouter/openai/gpt-4o": {InputPerMTok: 3},
		"claude-haiku-4-5":         {OutputPerMTok: 6},
	})
	tests := []struct {
		name  string
		model string
		check func(t *testing.T, m Model)
	}{
		{"window replaced, rest kept", "gpt-4o", func(t *testing.T, m Model) {
			if m.Window != 64000 || m.MaxOutput != 16384 || m.InputPerMTok != 2.5 || !m.PriceKnown {
				t.Fatalf("got %+v", m)
			}
		}},
		{"unknown becomes known", "my-local", func(t *testing.T, m Model) {
			if !m.Known || m.Window != 65536 || m.MaxOutput != UnknownMaxOutput || m.PriceKnown {
				t.Fatalf("got %+v", m)
			}
		}},
		{"unknown with tag still matches", "my-local:latest", func(t *testing.T, m Model) {
			if !m.Known || m.Window != 65536 {
				t.Fatalf("got %+v", m)
			}
		}},
		{"free local model", "local-free", func(t *testing.T, m Model) {
			usd, ok := m.Cost(llm.Usage{InputTokens: 1e6, OutputTokens: 1e6, Reported: true})
			if !ok || usd != 0 {
				t.Fatalf("Cost = %v, %v; want 0, true", usd, ok)
			}
		}},
		{"prefixed override resolves its base", "openrouter/openai/gpt-4o", func(t *testing.T, m Model) {
			if m.InputPerMTok != 3 || m.OutputPerMTok != 10 || m.Window != 128000 {
				t.Fatalf("got %+v", m)
			}
		}},
		{"dated name reaches override", "claude-haiku-4-5-20251001", func(t *testing.T, m Model) {
			if m.OutputPerMTok != 6 || m.InputPerMTok != 1 {
				t.Fatalf("got %+v", m)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, cat.Lookup(tt.model)) })
	}
	t.Run("other catalogues unaffected", func(t *testing.T) {
		if w := New(nil).Lookup("gpt-4o").Window; w != 128000 {
			t.Fatalf("Window = %d, want 128000", w)
		}
	})
}

func TestCost(t *testing.T) {
	cat := New(nil)
	const M = 1_000_000
	tests := []struct {
		name  string
		model string
		u     llm.Usage
		want  float64
		ok    bool
	}{
		{"input", "gpt-4o", llm.Usage{InputTokens: M}, 2.5, true},
		{"output", "gpt-4o", llm.Usage{OutputTokens: M}, 10, true},
		{"cache read", "gpt-4o", llm.Usage{CacheReadTokens: M}, 1.25, true},
		{"no write premium charges input rate", "gpt-4o", llm.Usage{CacheWriteTokens: M}, 2.5, true},
		{"anthropic cache write", "claude-sonnet-4-5", llm.Usage{CacheWriteTokens: M}, 3.75, true},
		{"no read discount charges input rate", "mistral-large", llm.Usage{CacheReadTokens: M}, 0.5, true},
		{"mixed", "claude-sonnet-4-5", llm.Usage{InputTokens: 2000, CacheReadTokens: 100000, CacheWriteTokens: 10000, OutputTokens: 1000},
			(2000*3 + 100000*0.3 + 10000*3.75 + 1000*15) / 1e6, true},
		// Anthropic's 1-hour tier: writes cost 2× input, 5m writes 1.25×.
		{"anthropic 1h cache write", "claude-sonnet-4-5", llm.Usage{CacheWriteTokens: M, CacheWrite1hTokens: M}, 6, true},
		{"anthropic writes split by tier", "claude-sonnet-4-5", llm.Usage{CacheWriteTokens: 3 * M, CacheWrite1hTokens: M}, 2*3.75 + 6, true},
		{"1h count above the writes is clamped", "claude-opus-4-5", llm.Usage{CacheWriteTokens: M, CacheWrite1hTokens: 2 * M}, 10, true},
		{"no write premium: 1h at input rate", "gpt-4o", llm.Usage{CacheWriteTokens: M, CacheWrite1hTokens: M}, 2.5, true},
		{"open weights", "qwen3", llm.Usage{InputTokens: M}, 0, false},
		{"unknown", "mystery", llm.Usage{InputTokens: M}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := cat.Lookup(tt.model).Cost(tt.u)
			if ok != tt.ok || math.Abs(got-tt.want) > 1e-9 {
				t.Fatalf("Cost = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}
