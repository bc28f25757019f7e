//go:build !unix

package workspace

import (
	"io/fs"
	"os"
)

// links is 1: without unix stat, hard links cannot be counted.
func links(fs.FileInfo) uint64 { return 1 }

// fileID is unknown without unix stat: inodes come from paths.
func fileID(fs.FileInfo) (dev, ino uint64, ok bool) { return 0, 0, false }

// openRead opens name in root to read (no FIFOs to block on here).
func openRead(root *os.Root, name string) (*os.File, error) { return root.Open(name) }
