//go:build !unix

package main

import "os/exec"

// Here (Windows) there is no resident (internal/resident): nothing is
// spawned, and this only keeps the CLI building.

func detach(*exec.Cmd) {}
