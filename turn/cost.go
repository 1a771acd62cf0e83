package turn

import (
	"strings"

	"github.com/talaria-agent/talaria/llm"
)

// priceCall prices one answered call with the model that actually answered:
// the response's model name where the provider returned one the catalogue
// prices (a router or an alias can answer with another model than the one
// asked for), else the route's. A subscription route has no per-call cost;
// it reports PriceSubscription instead of a $0 that would read as "free".
func (e *Engine) priceCall(st *state, resp *llm.Response) (usd float64, p Price, answeredBy string) {
	answeredBy = e.route(st).Model
	if resp.Model != "" {
		answeredBy = resp.Model
	}
	if e.route(st).Subscription {
		return 0, PriceSubscription, answeredBy
	}
	info := st.model
	if resp.Model != "" && !strings.EqualFold(resp.Model, e.route(st).Model) {
		if m := e.cfg.Catalogue.Lookup(resp.Model); m.Known && m.PriceKnown {
			info = m
		}
	}
	if c, ok := info.Cost(resp.Usage); ok {
		return c, PriceKnown, answeredBy
	}
	return 0, PriceUnknown, answeredBy
}

// pricing summarises how a turn's cost is known, for Result.Pricing.
func pricing(st *state) Pricing {
	switch {
	case st.res.APICalls == 0:
		return PricingNone
	case st.subscription && !st.priced:
		return PricingSubscription
	case st.subscription:
		return PricingPartlySubscription
	case !st.res.CostKnown:
		return PricingUnknown
	}
	return PricingPriced
}

// accountCall adds an answered call's cost to the turn and reports it.
func (e *Engine) accountCall(st *state, resp *llm.Response) {
	usd, p, answeredBy := e.priceCall(st, resp)
	switch p {
	case PriceKnown:
		st.res.CostUSD += usd
		st.priced = true
	case PriceSubscription:
		st.subscription = true
	default:
		st.res.CostKnown = false
	}
	if st.obs != nil {
		e.observe(st, &Event{Kind: EventCallEnd, Attempt: st.res.APICalls, Response: resp, ResponseModel: answeredBy,
			Usage: resp.Usage, CostUSD: usd, Price: p, FinishReason: resp.FinishReason,
			Latency: st.lastLatency, TimeToFirstToken: st.lastTTFT})
	}
}
