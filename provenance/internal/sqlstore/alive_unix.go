//go:build unix

package sqlstore

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process with this pid exists (a zombie
// counts, until its parent reaps it).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
