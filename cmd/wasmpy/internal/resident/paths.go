// Package resident is wasmpy's per-user resident process, which keeps
// sandboxes loaded so that `wasmpy exec` hands it its run: the server
// (Server: a sandbox per configuration, a run per client, the idle exit),
// the protocol between it and the CLI (Request, Job, Reply), and the
// transport: where the socket lives, who may connect, how messages are
// framed, and how a client's standard streams travel to the resident
// (SCM_RIGHTS), so that the resident writes to the client's own terminal,
// pipe or file. The CLI's commands and its hand-off are in cmd/wasmpy
// (resident.go, handoff.go).
//
// Both ends check the other's credentials (SO_PEERCRED): only a process of
// the same user is served, and a client talks only to a resident of its
// own user. The socket lives in a directory of mode 0700 owned by the user.
package resident

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
)

// Bounds on one message, checked on its header before anything is
// allocated for it, and its body read as it arrives (a header that
// announces much and sends little costs what it sends).
const (
	// MaxRequest bounds what a client sends: a script and a --stdin file
	// (64 MiB each, the stdin as base64) and the job. A client whose
	// request would be larger runs it itself.
	MaxRequest = 192 << 20
	// MaxReply bounds what the resident answers: the result and the files
	// the run wrote.
	MaxReply = 1 << 30
)

// ErrTooLarge is a message past the bound of its direction.
var ErrTooLarge = errors.New("wasmpy: resident: message too large")

// maxFiles is the most descriptors one message carries.
const maxFiles = 3

var (
	// ErrRunning means another resident holds the socket.
	ErrRunning = errors.New("wasmpy: a resident is running already")
	// ErrNotRunning means no resident listens on the socket.
	ErrNotRunning = errors.New("wasmpy: no resident is running")
)

// Paths are the socket and lock files of the resident for the binary at
// exe: each installation of wasmpy has its own resident.
func Paths(dir, exe string) (socket, lock string) {
	h := sha256.Sum256([]byte(exe))
	name := fmt.Sprintf("resident-%x", h[:6])
	return filepath.Join(dir, name+".sock"), filepath.Join(dir, name+".lock")
}
