package config

// Serve configures `talaria serve`.
type Serve struct {
	Addr string `yaml:"addr"` // default 127.0.0.1:7420
	// Busy: what a message for a session with a running turn does:
	// queue (default), interrupt, or reject.
	Busy               string   `yaml:"busy"`
	QueueLimit         int      `yaml:"queue_limit"`          // queued messages per session (default 16)
	MaxConcurrentTurns int      `yaml:"max_concurrent_turns"` // default 64
	ApprovalTimeout    Duration `yaml:"approval_timeout"`     // unanswered approval = denial (default 5m)
	Drain              Duration `yaml:"drain"`                // shutdown grace for running turns (default 30s)
	MaxBodyBytes       int64    `yaml:"max_body_bytes"`       // default 1 MiB
	TLSCert            string   `yaml:"tls_cert"`
	TLSKey             string   `yaml:"tls_key"`
}
