//go:build !unix

package agent

import "fmt"

func interruptProcess(pid int) error {
	return fmt.Errorf("%w: cannot signal process %d on this system", ErrForeignHolder, pid)
}
