//go:build !unix

package sqlstore

import "os"

// processAlive reports whether a process with this pid exists; where that
// cannot be told, it says yes, so live records are never marked interrupted.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
