package config

// Telemetry configures OpenTelemetry export and the recorded event log
// (config.yaml's telemetry section). The standard OTEL_* environment
// variables override it; OTEL_EXPORTER_OTLP_ENDPOINT alone turns export on.
type Telemetry struct {
	// Endpoint is the OTLP collector ("http://localhost:4318" for
	// http/protobuf, "http://localhost:4317" for grpc); empty exports
	// nothing unless the environment names one.
	Endpoint string `yaml:"endpoint"`
	// Protocol is "http/protobuf" (default) or "grpc" (a binary built
	// with -tags otlpgrpc; the default build says so and stops).
	Protocol string            `yaml:"protocol"`
	Headers  map[string]string `yaml:"headers"`
	// ServiceName defaults to "talaria".
	ServiceName string `yaml:"service_name"`
	// Capture: metadata, redacted (default) or full; see the README's
	// Observability section.
	Capture string `yaml:"capture"`
	// MaxContent bounds one captured content attribute in redacted mode
	// (bytes; default 4096).
	MaxContent int `yaml:"max_content"`
	// Disabled turns OTel export off whatever the environment says.
	Disabled bool `yaml:"disabled"`
	// NoRecord stops recording each turn's events in the database (what
	// `talaria trace` shows).
	NoRecord bool `yaml:"no_record"`
}
