//go:build !unix

package main

import (
	"os"

	"github.com/wasmpy/wasmpy/internal/hostfile"
)

const oNonblock = 0

// tryLock locks nothing: without flock, concurrent turns on one session
// file are not serialized (see README).
func tryLock(*os.File) (bool, error) { return true, nil }

// readSessionKey reads the key at path (no owner or mode to check).
func readSessionKey(path string) ([]byte, error) {
	key, err := hostfile.ReadFile(path, sessionKeyLen)
	if err == nil && len(key) != sessionKeyLen {
		return nil, keyError("not a key")
	}
	return key, err
}
