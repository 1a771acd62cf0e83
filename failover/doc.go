// Package failover decides what a failed model call means and what to do
// about it: it classifies provider errors into the vocabulary of DESIGN.md
// ("Error classes"), computes back-off delays, keeps a pool of credentials
// per provider with persisted cooldowns, maps a classified failure to one
// recovery action for the retry loop, and explains failures to people.
// Its Class vocabulary names provider failures only; how a class ends a
// turn is turn's to say (turn.Exit), and what a front end makes of it (an
// exit code, a command to run) is the front end's.
//
// The package is pure policy: it makes no network calls and imports only llm
// and store (for the Cooldown type) of Talaria's packages.
package failover
