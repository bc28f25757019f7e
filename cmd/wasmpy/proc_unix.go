//go:build unix

package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// detach starts cmd in a session of its own, so that the terminal's
// signals do not reach it (the resident outlives the client that spawned it).
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }

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
