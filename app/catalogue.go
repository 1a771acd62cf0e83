package app

import (
	"github.com/talaria-agent/talaria/catalogue"
	"github.com/talaria-agent/talaria/compact"
)

// nativeMargin is how far below the local compression trigger the server's
// compaction threshold sits, so the server compacts first and local
// compression stays armed as the fallback owner.
const nativeMargin = 8192

// Catalogue is the built-in model catalogue with the configuration's
// models section over it.
func Catalogue(cfg *Config) *catalogue.Catalogue { return catalogue.New(modelOverrides(cfg)) }

// modelOverrides maps the config's models section onto catalogue entries.
func modelOverrides(cfg *Config) map[string]catalogue.Model {
	overrides := map[string]catalogue.Model{}
	for name, m := range cfg.Models {
		overrides[name] = catalogue.Model{
			Model: name, Window: m.Window, MaxOutput: m.MaxOutput,
			InputPerMTok: m.InputPerMTok, OutputPerMTok: m.OutputPerMTok,
			CacheReadPerMTok: m.CacheReadPerMTok, CacheWritePerMTok: m.CacheWritePerMTok,
			CompressionRatio: m.CompressionThreshold, CompressionTokens: m.CompressionThresholdTokens,
		}
	}
	return overrides
}

// nativeCompactThreshold is the compact_threshold sent with native
// compaction for model: the local trigger minus nativeMargin (at least a
// quarter of the local trigger).
func nativeCompactThreshold(cfg *Config, model string) int {
	info := Catalogue(cfg).Lookup(model)
	local := compact.Threshold{Ratio: cfg.Compression.Threshold, Tokens: cfg.Compression.ThresholdTokens}.For(info).Limit(info.Window)
	return max(local-nativeMargin, local/4)
}
