package main

import (
	"github.com/talaria-agent/talaria/catalogue"
	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/internal/config"
)

// nativeMargin is how far below the local compression trigger the server's
// compaction threshold sits, so the server compacts first and local
// compression stays armed as the fallback owner.
const nativeMargin = 8192

// modelOverrides maps the config's models section onto catalogue entries.
func modelOverrides(cfg *config.Config) map[string]catalogue.Model {
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
func nativeCompactThreshold(cfg *config.Config, model string) int {
	info := catalogue.New(modelOverrides(cfg)).Lookup(model)
	local := compact.Threshold{Ratio: cfg.Compression.Threshold, Tokens: cfg.Compression.ThresholdTokens}.For(info).Limit(info.Window)
	return max(local-nativeMargin, local/4)
}
