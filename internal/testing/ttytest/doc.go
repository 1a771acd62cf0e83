// Package ttytest drives the real talaria binary in a pseudo-terminal, the
// way a person at a terminal does: keys and pastes in, frames out. Its
// tests build cmd/talaria and run it against internal/fakellm.
package ttytest
