package config

// Subagents configures the delegate tool (subagents: in config.yaml).
type Subagents struct {
	// Enabled offers the delegate tool (default true).
	Enabled *bool `yaml:"enabled"`
	// MaxDepth: how deep subagents nest (default 1: a subagent cannot
	// delegate). MaxParallel: subagents running at once (default 4).
	MaxDepth    int `yaml:"max_depth"`
	MaxParallel int `yaml:"max_parallel"`
	// MaxIterations is a subagent turn's budget (default: max_iterations).
	MaxIterations int `yaml:"max_iterations"`
}

// Memory configures the workspace memory (memory: in config.yaml).
type Memory struct {
	// Enabled offers the memory tool and puts the memory in each new
	// session's system prompt (default true).
	Enabled *bool `yaml:"enabled"`
	// User keeps a per-user memory in the workspace besides the shared one.
	User string `yaml:"user"`
	// MaxTokens bounds the memory block in the system prompt (default 1000).
	MaxTokens int `yaml:"max_tokens"`
}

// Review configures the background review (review: in config.yaml).
type Review struct {
	// Enabled turns the review on (default off).
	Enabled bool `yaml:"enabled"`
	// Idle: how long a session stays idle after a turn before the review
	// starts (default 2s).
	Idle          Duration `yaml:"idle"`
	MaxIterations int      `yaml:"max_iterations"`
}
