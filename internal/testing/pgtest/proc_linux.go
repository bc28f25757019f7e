package pgtest

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// procAttrs are how initdb and the server run: as the server's user (see
// serverUser), the server in a process group of its own that ends with
// the test binary.
func procAttrs(dir string) (initdb, server *syscall.SysProcAttr, err error) {
	cred, err := serverUser(dir)
	if err != nil {
		return nil, nil, err
	}
	return &syscall.SysProcAttr{Credential: cred}, &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGTERM, Setpgid: true}, nil
}

func killGroup(pid int) { syscall.Kill(-pid, syscall.SIGKILL) }

// serverUser is who the server runs as: this user, or, for root, the
// postgres user (else nobody), who then owns dir.
func serverUser(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		if u, err = user.Lookup("nobody"); err != nil {
			return nil, fmt.Errorf("pgtest: running as root, and there is no postgres or nobody user to run the server as")
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}
