package turn_test

import (
	"encoding/json"
	"testing"

	"github.com/talaria-agent/talaria/turn"
)

// TestPricingWire pins Result.Pricing's wire strings: the enum replaced a
// plain string, and scripts read these values.
func TestPricingWire(t *testing.T) {
	tests := []struct {
		p    turn.Pricing
		wire string // "" = the key is omitted
	}{
		{turn.PricingNone, ""},
		{turn.PricingPriced, "priced"},
		{turn.PricingUnknown, "unpriced"},
		{turn.PricingSubscription, "subscription"},
		{turn.PricingPartlySubscription, "partly subscription"},
	}
	for _, tc := range tests {
		t.Run(tc.wire, func(t *testing.T) {
			b, err := json.Marshal(turn.Result{Pricing: tc.p})
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			got, present := m["pricing"]
			if tc.wire == "" && present || tc.wire != "" && got != tc.wire {
				t.Fatalf("pricing on the wire %v (present %v), want %q", got, present, tc.wire)
			}
			var back turn.Result
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if back.Pricing != tc.p {
				t.Fatalf("decoded %q, want %q", back.Pricing, tc.p)
			}
		})
	}
}

// TestPricePricing: a call's Price and a turn's Pricing share their wire
// strings, so a trace's call rows and its turn row read alike.
func TestPricePricing(t *testing.T) {
	for _, tc := range []struct {
		p    turn.Price
		want turn.Pricing
	}{
		{turn.PriceKnown, turn.PricingPriced},
		{turn.PriceUnknown, turn.PricingUnknown},
		{turn.PriceSubscription, turn.PricingSubscription},
	} {
		if got := tc.p.Pricing(); got != tc.want || tc.p.String() != string(tc.want) {
			t.Errorf("%v: Pricing %q, String %q; want %q", tc.p, got, tc.p.String(), tc.want)
		}
	}
}
