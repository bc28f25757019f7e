//go:build !unix

package main

import (
	"os"
	"os/exec"
)

// Here (Windows) there is no resident (internal/resident): nothing is
// spawned or served, and these only keep the CLI building.

func detach(*exec.Cmd) {}

func pollRead(f, _ *os.File, p []byte) (int, error) { return f.Read(p) }
