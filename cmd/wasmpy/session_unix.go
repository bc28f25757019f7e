//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/wasmpy/wasmpy/internal/hostfile"
)

const oNonblock = syscall.O_NONBLOCK

// tryLock takes f's exclusive lock (flock) if no one holds it.
func tryLock(f *os.File) (bool, error) {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// readSessionKey reads the key at path, if it is a regular file of the
// user's, of the key's size, that no one else may read or write.
func readSessionKey(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, keyError("a symlink")
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return nil, keyError("not a regular file")
	case st != nil && int(st.Uid) != os.Getuid():
		return nil, keyError(fmt.Sprintf("owned by uid %d, not by you", st.Uid))
	case fi.Mode().Perm()&0o077 != 0:
		return nil, keyError(fmt.Sprintf("mode %#o lets others at it", fi.Mode().Perm()))
	}
	hf, err := hostfile.Check(f, path, sessionKeyLen)
	if err != nil {
		return nil, err
	}
	key, err := hf.ReadAll()
	if err != nil {
		return nil, err
	}
	if len(key) != sessionKeyLen {
		return nil, keyError(fmt.Sprintf("%d bytes", len(key)))
	}
	return key, nil
}
