//go:build !unix

package workspace

import "io/fs"

// links is 1: without unix stat, hard links cannot be counted.
func links(fs.FileInfo) uint64 { return 1 }

// fileID is unknown without unix stat: inodes come from paths.
func fileID(fs.FileInfo) (dev, ino uint64, ok bool) { return 0, 0, false }
