package gateway

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/talaria-agent/talaria/turn"
)

// Metrics holds every instrument the gateway reports, in one place, so that
// an OpenTelemetry exporter can later be fed from the same calls. Nothing is
// registered globally: each Metrics has its own registry.
type Metrics struct {
	reg *prometheus.Registry

	Turns          *prometheus.CounterVec   // by exit reason
	APICalls       *prometheus.CounterVec   // by provider, model, class ("ok" or the failure class)
	Retries        prometheus.Counter       // status lines of kind retry
	Fallbacks      prometheus.Counter       // fallback switches
	Compressions   prometheus.Counter       // compression passes
	GuardFirings   prometheus.Counter       // guard nudges, notices, empty-answer retries
	Tokens         *prometheus.CounterVec   // by provider, model, kind (input, output, cache_read, cache_write)
	CostUSD        *prometheus.CounterVec   // by provider, model
	TurnSeconds    *prometheus.HistogramVec // whole turn, by exit
	CallSeconds    *prometheus.HistogramVec // each API call, by provider, model
	ToolCalls      *prometheus.CounterVec   // by tool, outcome
	Approvals      *prometheus.CounterVec   // by outcome
	ActiveTurns    prometheus.Gauge
	QueuedMessages prometheus.Gauge
	Subscribers    prometheus.Gauge // open SSE streams
}

// NewMetrics builds the instruments on reg (nil: a new registry with the
// Go and process collectors).
func NewMetrics(reg *prometheus.Registry) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	f := func(c prometheus.Collector) { reg.MustRegister(c) }
	m := &Metrics{reg: reg}
	m.Turns = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "talaria_turns_total", Help: "Turns finished, by exit reason."}, []string{"exit"})
	m.APICalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "talaria_api_calls_total", Help: "Model API calls, by provider, model and outcome class."}, []string{"provider", "model", "class"})
	m.Retries = prometheus.NewCounter(prometheus.CounterOpts{Name: "talaria_retries_total", Help: "Retried API calls."})
	m.Fallbacks = prometheus.NewCounter(prometheus.CounterOpts{Name: "talaria_fallbacks_total", Help: "Switches to a fallback route."})
	m.Compressions = prometheus.NewCounter(prometheus.CounterOpts{Name: "talaria_compressions_total", Help: "Context compression passes."})
	m.GuardFirings = prometheus.NewCounter(prometheus.CounterOpts{Name: "talaria_guard_firings_total", Help: "Guard nudges, notices and empty-answer retries."})
	m.Tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "talaria_tokens_total", Help: "Tokens, by provider, model and kind."}, []string{"provider", "model", "kind"})
	m.CostUSD = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "talaria_cost_usd_total", Help: "Cost in US dollars at list prices."}, []string{"provider", "model"})
	m.TurnSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "talaria_turn_duration_seconds", Help: "Turn latency.",
		Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}}, []string{"exit"})
	m.CallSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "talaria_api_call_duration_seconds", Help: "Model API call latency (to the end of the streamed answer).",
		Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 10)}, []string{"provider", "model"})
	m.ToolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "talaria_tool_calls_total", Help: "Tool calls, by tool and outcome."}, []string{"tool", "outcome"})
	m.Approvals = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "talaria_approvals_total", Help: "Approval requests and how they ended."}, []string{"outcome"})
	m.ActiveTurns = prometheus.NewGauge(prometheus.GaugeOpts{Name: "talaria_active_turns", Help: "Turns running now."})
	m.QueuedMessages = prometheus.NewGauge(prometheus.GaugeOpts{Name: "talaria_queued_messages", Help: "Messages waiting for their session or a turn slot."})
	m.Subscribers = prometheus.NewGauge(prometheus.GaugeOpts{Name: "talaria_sse_subscribers", Help: "Open event streams."})
	for _, c := range []prometheus.Collector{m.Turns, m.APICalls, m.Retries, m.Fallbacks, m.Compressions, m.GuardFirings,
		m.Tokens, m.CostUSD, m.TurnSeconds, m.CallSeconds, m.ToolCalls, m.Approvals, m.ActiveTurns, m.QueuedMessages, m.Subscribers} {
		f(c)
	}
	return m
}

// Registry is where the instruments live (to add more collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

func (m *Metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// status counts a status line by kind (statusKind).
func (m *Metrics) status(kind string) {
	switch kind {
	case "retry":
		m.Retries.Inc()
	case "fallback":
		m.Fallbacks.Inc()
	case "compression":
		m.Compressions.Inc()
	case "guard":
		m.GuardFirings.Inc()
	}
}

// turnFinished records a finished turn's result.
func (m *Metrics) turnFinished(res *turn.Result, took time.Duration) {
	exit := string(res.Exit)
	if exit == "" {
		exit = "unknown"
	}
	m.Turns.WithLabelValues(exit).Inc()
	m.TurnSeconds.WithLabelValues(exit).Observe(took.Seconds())
	if res.Provider != "" {
		u := res.Usage
		for kind, n := range map[string]int64{"input": u.InputTokens, "output": u.OutputTokens, "cache_read": u.CacheReadTokens, "cache_write": u.CacheWriteTokens} {
			if n > 0 {
				m.Tokens.WithLabelValues(res.Provider, res.Model, kind).Add(float64(n))
			}
		}
		if res.CostKnown && res.CostUSD > 0 {
			m.CostUSD.WithLabelValues(res.Provider, res.Model).Add(res.CostUSD)
		}
	}
}
