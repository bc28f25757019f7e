package main

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
	"github.com/wasmpy/wasmpy/internal/hostfile"
)

// sessionFile is `exec --session FILE` for one turn: FILE locked, so that
// a concurrent turn on it waits for this one to save (else both would
// start from the same state and one would be lost), and the session in it.
type sessionFile struct {
	path string
	lock *os.File // FILE as it was when locked; closing it unlocks
}

// openSession locks FILE, waiting for a turn that holds it at most wait
// (a signal ends the wait: its exit status is returned), and gives `exec
// --session FILE` its session: the one saved in FILE, or a new one when
// FILE does not exist yet or is empty. The caller closes the sessionFile
// after it has saved the turn.
func openSession(c *cli.Context, sb *wasmpy.Sandbox, path string, wait time.Duration, sigs <-chan os.Signal) (*sessionFile, *wasmpy.Session, int, error) {
	lock, stop, err := lockSessionFile(path, wait, sigs, c.App.ErrWriter)
	if err != nil || stop != 0 {
		return nil, nil, stop, err
	}
	sf := &sessionFile{path: path, lock: lock}
	f, err := hostfile.Check(lock, path, wasmpy.SessionLimits{}.MaxSavedBytes())
	if err != nil {
		sf.close()
		return nil, nil, 0, usageErr("--session %v", err)
	}
	if f.Size() == 0 { // new: made by lockSessionFile, or left by a first turn that kept nothing
		sess, err := sb.NewSession(c.Context)
		if err != nil {
			sf.close()
			return nil, nil, 0, &exitError{code: exitWasmpy, msg: "--session: " + strings.TrimPrefix(console.OneLine(err), "wasmpy: ")}
		}
		return sf, sess, 0, nil
	}
	sess, err := sb.RestoreSession(c.Context, f)
	if err != nil {
		sf.close()
		msg := strings.TrimPrefix(console.OneLine(err), "wasmpy: ")
		if errors.Is(err, wasmpy.ErrSessionSeal) {
			key, _ := sessionKeyPath()
			msg += " (your key: " + key + "; a session saved by another user, or by wasmpy before sessions were sealed, cannot be restored)"
		}
		return nil, nil, 0, usageErr("--session %s: %s", path, msg)
	}
	return sf, sess, 0, nil
}

func (sf *sessionFile) close() { sf.lock.Close() }

// lockSessionFile opens FILE (creating it empty, mode 0600, if need be)
// and takes its lock, saying on stderr when it waits. A turn saves by
// renaming a new file over FILE, so a lock taken on the file it replaced
// is taken again on the new one.
func lockSessionFile(path string, wait time.Duration, sigs <-chan os.Signal, stderr io.Writer) (*os.File, int, error) {
	start := time.Now()
	for pause := 5 * time.Millisecond; ; {
		f, err := openLockable(path)
		if err != nil {
			return nil, 0, usageErr("--session %v", err)
		}
		locked, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, 0, &exitError{code: exitWasmpy, msg: fmt.Sprintf("--session %s: locking it: %v", path, unwrap(err))}
		}
		if locked {
			if now, err := os.Stat(path); err == nil && sameFile(f, now) {
				return f, 0, nil
			}
			f.Close() // replaced by the turn that held it: lock the new one
			continue
		}
		f.Close()
		if pause == 5*time.Millisecond {
			bound := ""
			if wait < 24*time.Hour {
				bound = fmt.Sprintf(" (at most %s)", wait.Round(time.Millisecond))
			}
			fmt.Fprintf(stderr, "wasmpy: --session %s: another turn holds it: waiting%s\n", console.Clean(path), bound)
		}
		if time.Since(start) >= wait {
			return nil, 0, &exitError{code: exitWasmpy, msg: fmt.Sprintf("--session %s: another wasmpy turn holds it; gave up after %s (the run's timeout)", path, wait.Round(time.Millisecond))}
		}
		select {
		case s := <-sigs:
			if s == os.Interrupt {
				return nil, console.ExitSIGINT, nil
			}
			return nil, console.ExitSIGTERM, nil
		case <-time.After(pause):
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// openLockable opens FILE to lock and read it, creating it if need be,
// never waiting on a FIFO (its type is checked after).
func openLockable(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|oNonblock, 0o600)
	if err != nil {
		return nil, &hostfile.Error{Path: path, Reason: unwrap(err).Error(), Err: err}
	}
	return f, nil
}

func sameFile(f *os.File, fi fs.FileInfo) bool {
	held, err := f.Stat()
	return err == nil && os.SameFile(held, fi)
}

// saveSession writes the session to the file atomically: a crash leaves
// the old file or the new one, never a part. The lock is still held.
func (sf *sessionFile) save(sess *wasmpy.Session) error {
	path := sf.path
	var buf bytes.Buffer
	if err := sess.Save(&buf); err != nil {
		return &exitError{code: exitWasmpy, msg: "--session: " + strings.TrimPrefix(console.OneLine(err), "wasmpy: ")}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".wasmpy-session-*")
	if err == nil {
		_, err = tmp.Write(buf.Bytes())
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), path)
		}
		if err != nil {
			os.Remove(tmp.Name())
		}
	}
	if err != nil {
		return &exitError{code: exitWasmpy, msg: "--session: saving " + path + ": " + console.OneLine(unwrap(err))}
	}
	return nil
}

// sessionKeyLen is the size of the key that seals the user's saved sessions.
const sessionKeyLen = 32

// sessionKeyPath is where the user's session key lives: session.key in
// wasmpy's directory of the user's config dir.
func sessionKeyPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "wasmpy", "session.key"), nil
}

// sessionKey is the key that seals the user's saved sessions
// (wasmpy.Config.SessionKey): random, made on first use, readable by the
// user alone. A key file that is not the user's own, or that others may
// read, is refused: whoever reads it can craft sessions the user restores.
func sessionKey() ([]byte, error) {
	path, err := sessionKeyPath()
	if err != nil {
		return nil, &exitError{code: exitWasmpy, msg: "--session: no config dir for the session key: " + err.Error()}
	}
	bad := func(why string) error {
		return usageErr("--session: session key %s: %s (want a file of %d bytes, mode 0600, yours; delete it to make a new one, which refuses the sessions saved under this one)", path, why, sessionKeyLen)
	}
	for range 2 {
		key, err := readSessionKey(path)
		switch {
		case err == nil:
			return key, nil
		case !errors.Is(err, fs.ErrNotExist):
			var ke keyError
			if errors.As(err, &ke) {
				return nil, bad(string(ke))
			}
			return nil, bad(unwrap(err).Error())
		}
		if err := makeSessionKey(path); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, &exitError{code: exitWasmpy, msg: "--session: making the session key " + path + ": " + unwrap(err).Error()}
		}
	}
	return nil, bad("made, then gone")
}

type keyError string

func (e keyError) Error() string { return string(e) }

// makeSessionKey writes a new random key to path, unless one is there
// (fs.ErrExist: another process made it first).
func makeSessionKey(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".session.key-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(randomKey())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Link(tmp.Name(), path) // never replaces a key another process made
}

func randomKey() []byte {
	b := make([]byte, sessionKeyLen)
	rand.Read(b)
	return b
}
