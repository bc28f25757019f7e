//go:build unix

package workspace

import (
	"io/fs"
	"os"
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

// openRead opens name in root to read without blocking on what is no
// regular file: a FIFO opened plainly blocks until a writer comes, past
// any deadline. The caller checks the type on the open file.
func openRead(root *os.Root, name string) (*os.File, error) {
	return root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
