//go:build unix

package resident

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// pollRead reads f once it is readable, or returns io.EOF once stop is.
func pollRead(f, stop *os.File, p []byte) (int, error) {
	fds := []unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLIN}, {Fd: int32(stop.Fd()), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if fds[1].Revents != 0 {
			return 0, io.EOF
		}
		if fds[0].Revents != 0 {
			return f.Read(p)
		}
	}
}
