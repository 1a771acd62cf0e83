package main

import (
	"context"
	"log/slog"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/talaria-agent/talaria/internal/config"
	"github.com/talaria-agent/talaria/observe"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// observers builds what watches every turn: OpenTelemetry export when the
// config or the standard OTEL_* variables ask for it, and the recorded
// event log `talaria trace` reads (unless telemetry.no_record). The
// returned Telemetry must be shut down before exit so spans are delivered.
// readers are extra metric readers on the same instruments: `serve` passes
// observe.NewPromReader() so its /metrics and OTLP agree.
func (c *cli) observers(ctx context.Context, cfg *config.Config, st store.TurnEvents, log *slog.Logger, readers ...sdkmetric.Reader) (turn.Observer, *observe.Telemetry, error) {
	t := cfg.Telemetry
	var own []string
	for _, p := range cfg.Providers {
		own = append(own, p.KeyList(c.getenv)...)
	}
	tel, err := observe.Setup(ctx, observe.Settings{
		Endpoint: t.Endpoint, Protocol: t.Protocol, Headers: t.Headers,
		ServiceName: t.ServiceName, ServiceVersion: version,
		Capture: t.Capture, MaxContent: t.MaxContent, Disabled: t.Disabled,
		OwnKeys: own, Readers: readers, Spans: st,
	}, c.getenv)
	if err != nil {
		return nil, nil, &setupError{err.Error()}
	}
	var rec turn.Observer
	if !t.NoRecord {
		rec = &observe.Recorder{Store: st, Logger: log}
	}
	return turn.MultiObserver(tel.Observer, rec), tel, nil
}

// shutdownTelemetry delivers what is buffered, bounded so an unreachable
// collector cannot hold the process.
func shutdownTelemetry(tel *observe.Telemetry, log *slog.Logger) {
	if tel == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil && log != nil {
		log.Warn("telemetry: could not deliver everything to the collector", "error", err)
	}
}
