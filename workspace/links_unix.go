//go:build unix

package workspace

import (
	"io/fs"
	"syscall"
)

// links is the number of hard links to a file. A regular file with more
// than one may have its other names outside the stable directory, where
// os.Root cannot see them: the stable layer refuses such files.
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// fileID identifies the host file behind fi, so two names of one file
// (one through a symlink inside the stable directory) share an inode.
func fileID(fi fs.FileInfo) (dev, ino uint64, ok bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino), true
	}
	return 0, 0, false
}
