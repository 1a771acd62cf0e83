package app

import (
	"testing"

	"github.com/talaria-agent/talaria/internal/config"
)

// The native compaction threshold sits below the local trigger, whatever
// sets that trigger.
func TestNativeCompactThreshold(t *testing.T) {
	tests := []struct {
		name  string
		cfg   config.Config
		model string
		want  int
	}{
		{"catalogue window, default ratio", config.Config{}, "gpt-5.5", 1050000/2 - nativeMargin},
		{"global tokens", config.Config{Compression: config.Compression{ThresholdTokens: 100000}}, "gpt-5.5", 100000 - nativeMargin},
		{"model's own trigger wins", config.Config{Compression: config.Compression{ThresholdTokens: 100000},
			Models: map[string]config.Model{"gpt-5.5": {CompressionThresholdTokens: 50000}}}, "gpt-5.5", 50000 - nativeMargin},
		{"small trigger keeps a quarter", config.Config{Compression: config.Compression{ThresholdTokens: 8000}}, "gpt-5.5", 2000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nativeCompactThreshold(&tt.cfg, tt.model); got != tt.want {
				t.Errorf("threshold = %d, want %d", got, tt.want)
			}
		})
	}
}
