//go:build !linux

package pgtest

import (
	"errors"
	"syscall"
)

// Elsewhere than Linux the tests start no PostgreSQL server: those that
// need one fail, saying so (the package builds, so that go vet covers
// its users everywhere).
func procAttrs(string) (initdb, server *syscall.SysProcAttr, err error) {
	return nil, nil, errors.New("pgtest: the throwaway PostgreSQL server runs on Linux only")
}

func killGroup(int) {}
