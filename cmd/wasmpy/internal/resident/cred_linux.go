package resident

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// Binary identifies the running executable by its file's identity (device,
// inode, size, modification time): a rebuilt or reinstalled binary has
// another, so a resident can tell a client whose code differs from its own.
func Binary() (string, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &st); err != nil {
		return "", fmt.Errorf("wasmpy: resident: the running binary: %w", err)
	}
	return fmt.Sprintf("%d:%d:%d:%d.%09d", st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec), nil
}

// checkPeer refuses a peer of another user.
func checkPeer(c *net.UnixConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("wasmpy: resident: peer credentials: %w", cerr)
	}
	if int(cred.Uid) != os.Getuid() {
		return fmt.Errorf("wasmpy: resident: the peer (pid %d) is uid %d, not this user", cred.Pid, cred.Uid)
	}
	return nil
}

// Identity describes files by their metadata (device, inode, size,
// modification and change times): it changes when any of them is
// replaced, written or removed, as a cached copy's validity requires.
func Identity(paths ...string) string {
	var b []byte
	for _, p := range paths {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			b = fmt.Appendf(b, "%s:missing\n", p)
			continue
		}
		b = fmt.Appendf(b, "%s:%d:%d:%d:%d.%09d:%d.%09d\n", p, st.Dev, st.Ino, st.Size,
			st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
	}
	return string(b)
}
