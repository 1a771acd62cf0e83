package observe

import (
	"fmt"

	"go.opentelemetry.io/otel/metric"
)

// Metric names. The gen_ai.* ones follow the OpenTelemetry GenAI semantic
// conventions; talaria.* are Talaria's own. A Prometheus exporter on the
// same MeterProvider renders them as gen_ai_client_token_usage,
// talaria_retries_total, talaria_cost_usd_total, ... (PromReader).
const (
	MetricTokenUsage   = "gen_ai.client.token.usage"
	MetricDuration     = "gen_ai.client.operation.duration"
	MetricRetries      = "talaria.retries"
	MetricFallbacks    = "talaria.fallbacks"
	MetricCompressions = "talaria.compressions"
	MetricGuards       = "talaria.guard.firings"
	MetricCost         = "talaria.cost.usd"
	MetricCacheTokens  = "talaria.cache.tokens"
	MetricTurns        = "talaria.turns"
	MetricTurnDuration = "talaria.turn.duration"
	MetricCalls        = "talaria.calls"
	MetricToolCalls    = "talaria.tool.calls"
)

// instruments are created once per Observer; every turn records into them.
type instruments struct {
	tokens       metric.Int64Histogram
	duration     metric.Float64Histogram
	retries      metric.Int64Counter
	fallbacks    metric.Int64Counter
	compressions metric.Int64Counter
	guards       metric.Int64Counter
	cost         metric.Float64Counter
	cacheTokens  metric.Int64Counter
	turns        metric.Int64Counter
	turnDuration metric.Float64Histogram
	calls        metric.Int64Counter
	tools        metric.Int64Counter
}

func newInstruments(m metric.Meter) (*instruments, error) {
	var in instruments
	var errs []error
	check := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var err error
	in.tokens, err = m.Int64Histogram(MetricTokenUsage, metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used per model call."),
		metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864))
	check(err)
	in.duration, err = m.Float64Histogram(MetricDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of model calls (each attempt)."),
		metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92))
	check(err)
	in.retries, err = m.Int64Counter(MetricRetries, metric.WithUnit("{retry}"), metric.WithDescription("Model calls retried after a failure, by error class."))
	check(err)
	in.fallbacks, err = m.Int64Counter(MetricFallbacks, metric.WithUnit("{fallback}"), metric.WithDescription("Turns moved to the next route of the fallback chain."))
	check(err)
	in.compressions, err = m.Int64Counter(MetricCompressions, metric.WithUnit("{compression}"), metric.WithDescription("Context compression passes, by outcome."))
	check(err)
	in.guards, err = m.Int64Counter(MetricGuards, metric.WithUnit("{firing}"), metric.WithDescription("Guard firings, by guard and action."))
	check(err)
	// The unit is an annotation ({USD}), not a UCUM unit, so Prometheus
	// reads talaria_cost_usd_total rather than appending "USD".
	in.cost, err = m.Float64Counter(MetricCost, metric.WithUnit("{USD}"), metric.WithDescription("Cost of priced model calls in US dollars, by the model that answered."))
	check(err)
	in.cacheTokens, err = m.Int64Counter(MetricCacheTokens, metric.WithUnit("{token}"),
		metric.WithDescription("Prompt tokens read from or written to the provider's cache (part of the input tokens), by the model that answered."))
	check(err)
	in.turns, err = m.Int64Counter(MetricTurns, metric.WithUnit("{turn}"), metric.WithDescription("Turns ended, by exit reason."))
	check(err)
	in.turnDuration, err = m.Float64Histogram(MetricTurnDuration, metric.WithUnit("s"), metric.WithDescription("Duration of whole turns, by exit reason."),
		metric.WithExplicitBucketBoundaries(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600))
	check(err)
	in.calls, err = m.Int64Counter(MetricCalls, metric.WithUnit("{call}"), metric.WithDescription("Answered model calls, by pricing (priced, unpriced, subscription)."))
	check(err)
	in.tools, err = m.Int64Counter(MetricToolCalls, metric.WithUnit("{call}"), metric.WithDescription("Tool calls, by tool and error."))
	check(err)
	if len(errs) > 0 {
		return nil, fmt.Errorf("observe: creating instruments: %v", errs)
	}
	return &in, nil
}
