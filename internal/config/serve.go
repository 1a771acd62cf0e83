package config

// Serve configures `talaria serve`.
type Serve struct {
	Addr string `yaml:"addr"` // default 127.0.0.1:7420
	// Busy: what a message for a session with a running turn does:
	// queue (default), interrupt, reject, or steer (join the running
	// turn after its current tool round).
	Busy               string   `yaml:"busy"`
	QueueLimit         int      `yaml:"queue_limit"`          // queued messages per session (default 16)
	MaxConcurrentTurns int      `yaml:"max_concurrent_turns"` // default 64
	ApprovalTimeout    Duration `yaml:"approval_timeout"`     // unanswered approval = denial (default 5m)
	Drain              Duration `yaml:"drain"`                // shutdown grace for running turns (default 30s)
	MaxBodyBytes       int64    `yaml:"max_body_bytes"`       // default 1 MiB
	TLSCert            string   `yaml:"tls_cert"`
	TLSKey             string   `yaml:"tls_key"`
	// LeaseTTL is how long a turn lease lives without a refresh: on a
	// shared PostgreSQL database, how soon another node takes over the
	// sessions and queued messages of a node that died (default 5m).
	LeaseTTL Duration `yaml:"lease_ttl"`
	// Handoff is what happens to a turn whose node died mid-turn: continue
	// (default: the node that takes the session over continues it from its
	// last durable point) or interrupt (it is marked interrupted).
	// HandoffMax bounds how often one turn is handed off (default 2).
	Handoff    string `yaml:"handoff"`
	HandoffMax int    `yaml:"handoff_max"`
	// Tokens are API tokens given by configuration: each secret is read
	// from an environment variable (never from the file) and its hash is
	// added to the database at start, next to those made with
	// `talaria serve token create`.
	Tokens []ServeToken `yaml:"tokens"`
	// Heartbeat is the SSE keep-alive interval (default 15s); a stream
	// whose token was revoked closes at the next one.
	Heartbeat Duration `yaml:"heartbeat"`
	// AuthFailures is how many failed authentications one client address
	// may make per minute before it gets 429 (default 10; -1: no limit).
	AuthFailures int `yaml:"auth_failures_per_minute"`
	// Workspaces are the roots a session may work in, by name; see
	// ServeWorkspace. The server's own workspace is always "default".
	Workspaces map[string]ServeWorkspace `yaml:"workspaces"`
	// Limits are per principal (README "Serve → Security → Limits").
	Limits ServeLimits `yaml:"limits"`
	// HTTP hardening: how long an idle keep-alive connection, a request's
	// headers and a non-streaming request's body may take (defaults 60s,
	// 10s, 30s), and how many connections are open at once in total and
	// per client address (defaults 4096 and 256; beyond them new
	// connections are closed at once).
	IdleTimeout              Duration `yaml:"idle_timeout"`
	ReadHeaderTimeout        Duration `yaml:"read_header_timeout"`
	ReadTimeout              Duration `yaml:"read_timeout"`
	MaxConnections           int      `yaml:"max_connections"`
	MaxConnectionsPerAddress int      `yaml:"max_connections_per_address"`
	// MaxAgents and MaxIdleSessions bound the memory kept per model and
	// per idle session (defaults 64 and 4096; least recently used evicted).
	MaxAgents       int `yaml:"max_agents"`
	MaxIdleSessions int `yaml:"max_idle_sessions"`
}

// ServeLimits: Default applies to every principal; Principals[name]
// overrides it field by field.
type ServeLimits struct {
	Default    ServeLimit            `yaml:"default"`
	Principals map[string]ServeLimit `yaml:"principals"`
}

// ServeLimit is what one principal may use; zero fields take the default.
type ServeLimit struct {
	Turns             int      `yaml:"turns"`               // running at once (default 16)
	Queued            int      `yaml:"queued"`              // waiting across its sessions (default 256)
	Sessions          int      `yaml:"sessions"`            // stored (default 10000)
	Streams           int      `yaml:"streams"`             // open event streams (default 64)
	RequestsPerSecond float64  `yaml:"requests_per_second"` // default 50
	Burst             int      `yaml:"burst"`               // default 2× requests_per_second
	Searches          int      `yaml:"searches"`            // at once (default 2)
	SpendUSDPerDay    float64  `yaml:"spend_usd_per_day"`   // 0: no limit
	Models            []string `yaml:"models"`              // provider/model patterns; default: the configured routes
	// Sandbox is the sandbox mode of the principal's sessions (read-only,
	// workspace-write, off), never wider than the server's; default: the
	// server's.
	Sandbox string `yaml:"sandbox"`
	// Network narrows sandbox.network for the principal's commands: false
	// (none) or a list of hosts, each also in the server's list (or the
	// server's network true); true or unset: the server's.
	Network *Network `yaml:"network"`
	// Handoff and HandoffMax override serve.handoff and serve.handoff_max
	// for the principal's turns.
	Handoff    string `yaml:"handoff"`
	HandoffMax int    `yaml:"handoff_max"`
}

// ServeWorkspace is one named root sessions may choose over the API.
type ServeWorkspace struct {
	Path string `yaml:"path"`
	// Principals may use it; empty: every principal.
	Principals []string `yaml:"principals"`
}

// ServeToken is one configured API token.
type ServeToken struct {
	Name      string `yaml:"name"`
	Principal string `yaml:"principal"` // default: Name
	Env       string `yaml:"env"`       // the variable holding the secret (at least 32 characters)
	Scope     string `yaml:"scope"`     // "admin" (may read /metrics) or empty
}
