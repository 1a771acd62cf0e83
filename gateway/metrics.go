package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/talaria-agent/talaria/internal/promtext"
	"github.com/talaria-agent/talaria/observe"
	"github.com/talaria-agent/talaria/turn"
)

// MeterScope is the instrumentation scope of the gateway's own
// instruments (the turns' are observe.ScopeName).
const MeterScope = "github.com/talaria-agent/talaria/gateway"

// Metrics is what /metrics serves: the OpenTelemetry instruments every turn
// records through package observe (turns, calls, tokens, cost, retries,
// fallbacks, compressions, guards, tools) and the gateway's own (HTTP
// requests, active turns, queued messages, event streams, approvals), read
// by an observe.PromReader on the same MeterProvider as any OTLP export,
// with the Go runtime and process metrics (promtext.Runtime). There is one
// recording path: /metrics and a collector see the same instruments.
// Nothing is registered globally.
type Metrics struct {
	prom *observe.PromReader
	// observer records the turns' metrics when the Metrics own their
	// MeterProvider (NewMetrics); nil when the caller's turn observer
	// already records into the provider (SharedMetrics).
	observer turn.Observer

	activeTurns metric.Int64UpDownCounter
	queued      metric.Int64UpDownCounter
	subscribers metric.Int64UpDownCounter
	approvals   metric.Int64Counter
	requests    metric.Float64Histogram
	// Per principal (the label is bounded by the tokens the operator made).
	principalUse      metric.Int64UpDownCounter
	principalSpent    metric.Float64Counter
	principalRequests metric.Int64Counter
	handoffs          metric.Int64Counter
}

// NewMetrics builds a self-contained /metrics: a MeterProvider whose only
// reader is an observe.PromReader, and an observe.Observer (metrics only)
// the gateway adds to every turn. A gateway without telemetry configured
// uses it, so its /metrics always works.
func NewMetrics() (*Metrics, error) {
	reader := observe.NewPromReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	obs, err := observe.New(observe.Options{MeterProvider: mp, Capture: observe.CaptureMetadata})
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(reader, mp)
	if err != nil {
		return nil, err
	}
	m.observer = obs
	return m, nil
}

// SharedMetrics serves /metrics from telemetry the caller set up: tel comes
// from observe.Setup with reader among its Readers, and tel.Observer is
// part of the agents' Observer, so the turns record once into the
// instruments both /metrics and the OTLP exporter read. The gateway's own
// instruments join the same MeterProvider. Without a MeterProvider
// (telemetry disabled) it falls back to NewMetrics.
func SharedMetrics(reader *observe.PromReader, tel *observe.Telemetry) (*Metrics, error) {
	if reader == nil || tel == nil || tel.MeterProvider == nil {
		return NewMetrics()
	}
	return newMetrics(reader, tel.MeterProvider)
}

func newMetrics(reader *observe.PromReader, mp metric.MeterProvider) (*Metrics, error) {
	meter := mp.Meter(MeterScope)
	m := &Metrics{prom: reader}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var err error
	m.activeTurns, err = meter.Int64UpDownCounter("talaria.active_turns", metric.WithUnit("{turn}"), metric.WithDescription("Turns running now."))
	add(err)
	m.queued, err = meter.Int64UpDownCounter("talaria.queued_messages", metric.WithUnit("{message}"),
		metric.WithDescription("Messages waiting for their session or a turn slot."))
	add(err)
	m.subscribers, err = meter.Int64UpDownCounter("talaria.sse_subscribers", metric.WithUnit("{stream}"), metric.WithDescription("Open event streams."))
	add(err)
	m.approvals, err = meter.Int64Counter("talaria.approvals", metric.WithUnit("{approval}"),
		metric.WithDescription("Approval requests (asked) and how they ended (verdict_by)."))
	add(err)
	// The HTTP semantic conventions' server duration: its count is the
	// request count by route and status (409 busy, 429 queue full, ...).
	m.requests, err = meter.Float64Histogram("http.server.request.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of HTTP requests (event streams: until they close)."),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10))
	add(err)
	m.principalUse, err = meter.Int64UpDownCounter("talaria.principal.usage", metric.WithUnit("1"),
		metric.WithDescription("What each principal uses now (talaria.limit: turns, queued, sessions, streams, searches), against serve.limits."))
	add(err)
	m.principalSpent, err = meter.Float64Counter("talaria.principal.spend", metric.WithUnit("USD"),
		metric.WithDescription("Priced model spend per principal (the daily spending limit counts it per UTC day)."))
	add(err)
	m.principalRequests, err = meter.Int64Counter("talaria.principal.requests", metric.WithUnit("{request}"),
		metric.WithDescription("Authenticated API requests per principal; outcome=limited when the request rate refused one."))
	add(err)
	m.handoffs, err = meter.Int64Counter("talaria.turn.handoffs", metric.WithUnit("{handoff}"),
		metric.WithDescription("Turns whose node died, by what happened: continued here, interrupted (handoff: interrupt) or limit (handoff_max reached)."))
	add(err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("gateway: metrics: %w", err)
	}
	return m, nil
}

// Families is what /metrics serves: the instruments, then the Go runtime
// and process metrics.
func (m *Metrics) Families(ctx context.Context) ([]promtext.Family, error) {
	fams, err := m.prom.Families(ctx)
	return append(fams, promtext.Runtime()...), err
}

func (m *Metrics) handler() http.Handler { return promtext.Handler(m.Families) }

// The recording calls are bounded by nothing the request could cancel: a
// value recorded is recorded.

func (m *Metrics) turnsRunning(n int64) { m.activeTurns.Add(context.Background(), n) }
func (m *Metrics) queuedMessages(n int64) {
	m.queued.Add(context.Background(), n)
}
func (m *Metrics) streams(n int64) { m.subscribers.Add(context.Background(), n) }
func (m *Metrics) approval(outcome string) {
	m.approvals.Add(context.Background(), 1, metric.WithAttributes(attribute.String("talaria.approval.outcome", outcome)))
}

func (m *Metrics) principalUsage(principal, what string, n int64) {
	m.principalUse.Add(context.Background(), n, metric.WithAttributes(
		attribute.String("talaria.principal", principal), attribute.String("talaria.limit", what)))
}

func (m *Metrics) principalSpend(principal string, usd float64) {
	m.principalSpent.Add(context.Background(), usd, metric.WithAttributes(attribute.String("talaria.principal", principal)))
}

func (m *Metrics) principalRequest(principal, outcome string) {
	m.principalRequests.Add(context.Background(), 1, metric.WithAttributes(
		attribute.String("talaria.principal", principal), attribute.String("outcome", outcome)))
}

func (m *Metrics) handoff(outcome string) {
	m.handoffs.Add(context.Background(), 1, metric.WithAttributes(attribute.String("outcome", outcome)))
}

// instrument times every request by method, matched route and status.
func (m *Metrics) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		route := r.Pattern // set by the ServeMux on this request
		if route == "" {
			route = "unmatched"
		}
		m.requests.Record(context.Background(), time.Since(start).Seconds(), metric.WithAttributes(
			attribute.String("http.request.method", r.Method),
			attribute.String("http.route", route),
			attribute.Int("http.response.status_code", status)))
	})
}

// statusWriter remembers the status; Unwrap keeps http.ResponseController
// (the event streams' flushes and deadlines) working through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
