package gateway

import (
	"context"
	"errors"
	"iter"
	"time"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/turn"
)

// meteredProvider counts every model API call of the gateway's turns by
// provider, model and outcome class, and times it.
type meteredProvider struct {
	llm.Provider
	m *Metrics
}

func (p meteredProvider) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	inner := p.Provider.Stream(ctx, req)
	return func(yield func(llm.Event, error) bool) {
		start := time.Now()
		class := "ok"
		defer func() {
			p.m.APICalls.WithLabelValues(p.Name(), req.Model, class).Inc()
			p.m.CallSeconds.WithLabelValues(p.Name(), req.Model).Observe(time.Since(start).Seconds())
		}()
		for ev, err := range inner {
			if err != nil {
				class = "canceled"
				if !errors.Is(err, context.Canceled) {
					class = string(failover.ClassifyError(err).Class)
				}
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

// metered wraps each route's provider.
func metered(routes []turn.Route, m *Metrics) []turn.Route {
	out := make([]turn.Route, len(routes))
	for i, r := range routes {
		if _, ok := r.Provider.(meteredProvider); !ok {
			r.Provider = meteredProvider{Provider: r.Provider, m: m}
		}
		out[i] = r
	}
	return out
}
