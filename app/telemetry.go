package app

import (
	"context"
	"log/slog"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/talaria-agent/talaria/observe"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// Observers builds what watches every turn: OpenTelemetry export when the
// config or the standard OTEL_* variables ask for it, and the recorded
// event log `talaria trace` reads (unless telemetry.no_record). The
// returned Telemetry must be shut down before exit so spans are delivered.
// readers are extra metric readers on the same instruments: a gateway
// passes observe.NewPromReader() so its /metrics and OTLP agree.
func Observers(ctx context.Context, cfg *Config, o Options, st store.TurnEvents, readers ...sdkmetric.Reader) (turn.Observer, *observe.Telemetry, error) {
	o.defaults()
	t := cfg.Telemetry
	var own []string
	for _, p := range cfg.Providers {
		own = append(own, p.KeyList(o.Getenv)...)
	}
	tel, err := observe.Setup(ctx, observe.Settings{
		Endpoint: t.Endpoint, Protocol: t.Protocol, Headers: t.Headers,
		ServiceName: t.ServiceName, ServiceVersion: o.Version,
		Capture: t.Capture, MaxContent: t.MaxContent, Disabled: t.Disabled,
		OwnKeys: own, Readers: readers, Spans: st,
	}, o.Getenv)
	if err != nil {
		return nil, nil, &ConfigError{err.Error()}
	}
	var rec turn.Observer
	if !t.NoRecord {
		rec = &observe.Recorder{Store: st, Logger: o.Logger}
	}
	return turn.MultiObserver(tel.Observer, rec), tel, nil
}

// ShutdownTelemetry delivers what is buffered, bounded so an unreachable
// collector cannot hold the process.
func ShutdownTelemetry(tel *observe.Telemetry, log *slog.Logger) {
	if tel == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil && log != nil {
		log.Warn("telemetry: could not deliver everything to the collector", "error", err)
	}
}
