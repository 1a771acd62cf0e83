package compact

import (
	"testing"

	"github.com/talaria-agent/talaria/catalogue"
)

func TestThresholdLimit(t *testing.T) {
	tests := []struct {
		name   string
		th     Threshold
		window int
		want   int
	}{
		{"default ratio", Threshold{}, 200000, 100000},
		{"ratio", Threshold{Ratio: 0.8}, 200000, 160000},
		{"tokens win over ratio", Threshold{Ratio: 0.8, Tokens: 50000}, 200000, 50000},
		{"tokens capped at the window", Threshold{Tokens: 300000}, 200000, 200000},
		{"ratio above one capped", Threshold{Ratio: 1.5}, 1000, 1000},
		{"negative ratio uses default", Threshold{Ratio: -1}, 1000, 500},
		{"unknown window", Threshold{}, 0, catalogue.UnknownWindow / 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.th.Limit(tt.window); got != tt.want {
				t.Fatalf("Limit(%d) = %d, want %d", tt.window, got, tt.want)
			}
			if got := tt.th.RefundLimit(tt.window); got != tt.want*4/5 {
				t.Fatalf("RefundLimit(%d) = %d, want %d", tt.window, got, tt.want*4/5)
			}
		})
	}
}

func TestBudget(t *testing.T) {
	type step struct {
		op      string // spend, block, refund, reset
		allow   bool
		used    int
		blocked bool
	}
	tests := []struct {
		name  string
		b     *Budget
		steps []step
	}{
		{"spend until exhausted", NewBudget(2), []step{
			{"", true, 0, false},
			{"spend", true, 1, false},
			{"spend", false, 2, false},
			{"spend", false, 3, false},
		}},
		{"default is three", NewBudget(0), []step{
			{"spend", true, 1, false}, {"spend", true, 2, false}, {"spend", false, 3, false},
		}},
		{"zero value is three", &Budget{}, []step{
			{"spend", true, 1, false}, {"spend", true, 2, false}, {"spend", false, 3, false},
		}},
		{"block stops passes with attempts left", NewBudget(3), []step{
			{"spend", true, 1, false},
			{"block", false, 1, true},
		}},
		{"refund gives attempts back and clears the block", NewBudget(2), []step{
			{"spend", true, 1, false},
			{"spend", false, 2, false},
			{"block", false, 2, true},
			{"refund", true, 0, false},
		}},
		{"reset after fallback", NewBudget(1), []step{
			{"spend", false, 1, false},
			{"block", false, 1, true},
			{"reset", true, 0, false},
			{"spend", false, 1, false},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, s := range tt.steps {
				switch s.op {
				case "spend":
					tt.b.Spend()
				case "block":
					tt.b.Block()
				case "refund":
					tt.b.Refund()
				case "reset":
					tt.b.Reset()
				}
				if tt.b.Allow() != s.allow || tt.b.Used() != s.used || tt.b.Blocked() != s.blocked {
					t.Fatalf("step %d (%s): Allow=%v Used=%d Blocked=%v, want %v %d %v",
						i, s.op, tt.b.Allow(), tt.b.Used(), tt.b.Blocked(), s.allow, s.used, s.blocked)
				}
				if (tt.b.Left() > 0) != s.allow {
					t.Fatalf("step %d: Left=%d disagrees with Allow=%v", i, tt.b.Left(), s.allow)
				}
			}
		})
	}
}
