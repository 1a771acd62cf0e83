package agent

import (
	"errors"
	"fmt"
	"os"
)

// HolderName returns a lease holder name for this process in the form
// turns use (host:pid:random), so that other processes can judge it.
func HolderName() string { return defaultHolder() }

// ErrForeignHolder says a lease holder cannot be interrupted from here: it
// runs on another host (or names itself another way), or is this process.
var ErrForeignHolder = errors.New("the turn runs in a process this one cannot signal")

// InterruptHolder stops the turn of lease holder the way Ctrl+C would: it
// sends SIGINT to the holder's process, which then finalizes the turn and
// releases the lease. It refuses a holder on another host or this process.
func InterruptHolder(holder string) error {
	host, pid, ok := parseHolder(holder)
	if !ok || pid == os.Getpid() {
		return fmt.Errorf("%w (%s)", ErrForeignHolder, holder)
	}
	if me := hostID(); me == "" || host != me {
		return fmt.Errorf("%w: it runs on %s", ErrForeignHolder, host)
	}
	return interruptProcess(pid)
}
