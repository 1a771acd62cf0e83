//go:build !linux

package builtin

import "os/exec"

// processTree is only known on Linux; elsewhere the message stays general.
func processTree(*exec.Cmd) []string { return nil }
