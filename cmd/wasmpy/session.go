package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy"
)

// openSession gives `exec --session FILE` its session: the one saved in
// FILE, or a new one when FILE does not exist yet.
func openSession(c *cli.Context, sb *wasmpy.Sandbox, path string) (*wasmpy.Session, error) {
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		sess, err := sb.NewSession(c.Context)
		if err != nil {
			return nil, &exitError{code: exitWasmpy, msg: "--session: " + strings.TrimPrefix(oneLine(err), "wasmpy: ")}
		}
		return sess, nil
	case err != nil:
		return nil, usageErr("--session %s: %v", path, unwrap(err))
	}
	sess, err := sb.RestoreSession(c.Context, bytes.NewReader(b))
	if err != nil {
		return nil, usageErr("--session %s: %s", path, strings.TrimPrefix(oneLine(err), "wasmpy: "))
	}
	return sess, nil
}

// saveSession writes the session to path atomically: a crash leaves the
// old file or the new one, never a part.
func saveSession(sess *wasmpy.Session, path string) error {
	var buf bytes.Buffer
	if err := sess.Save(&buf); err != nil {
		return &exitError{code: exitWasmpy, msg: "--session: " + strings.TrimPrefix(oneLine(err), "wasmpy: ")}
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
		return &exitError{code: exitWasmpy, msg: "--session: saving " + path + ": " + oneLine(unwrap(err))}
	}
	return nil
}
