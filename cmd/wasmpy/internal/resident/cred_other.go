//go:build !linux

package resident

import (
	"errors"
	"fmt"
	"net"
	"os"
)

// Here wasmpy has no resident: every run is in-process.
var errUnsupported = errors.New("wasmpy: resident: not on this system")

func Binary() (string, error) { return "", errUnsupported }

func checkPeer(*net.UnixConn) error { return errUnsupported }

// Identity describes files by their size and modification time.
func Identity(paths ...string) string {
	var b []byte
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			b = fmt.Appendf(b, "%s:missing\n", p)
			continue
		}
		b = fmt.Appendf(b, "%s:%d:%d\n", p, fi.Size(), fi.ModTime().UnixNano())
	}
	return string(b)
}
