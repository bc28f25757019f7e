//go:build !unix

package workspace

import "io/fs"

// links is 1: without unix stat, hard links cannot be counted.
func links(fs.FileInfo) uint64 { return 1 }
