package main

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/wasmpy/wasmpy"
)

// What of the host a run sees, as python3 puts it on sys.path: the
// directory of SCRIPT; DIR itself; the zipapp's files; for -m, the
// current directory when the module's top-level name is there. That is
// mounted read-only at /app (wasmpy.AppMount), and -P mounts nothing.

// scriptProgram fills in job for `exec PATH`: a directory or a zipapp runs
// its __main__.py, a script runs with its directory mounted (a script that
// is no regular file, such as <(...), has no directory of its own). It
// returns the path of what it mounts, if anything.
func scriptProgram(job *wasmpy.Job, path string, isolate bool) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", usageErr("%s: %v", path, unwrap(err))
	}
	regular := fi.Mode().IsRegular() // not a pipe: <(...), /dev/stdin
	if fi.IsDir() || regular && isZipapp(path) {
		app, err := openApp(path)
		if err != nil {
			return "", err
		}
		job.App = app
		f, err := app.Open("__main__.py")
		if errors.Is(err, fs.ErrPermission) {
			return "", usageErr("%s: __main__.py is not a plain file (a pipe, a device, a link out or a hard link): refused", path)
		}
		if err != nil {
			return "", usageErr("can't find '__main__' module in %q", path)
		}
		return path, f.Close()
	}
	f, size, err := openFile(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if job.Code, err = readText(f, path, size); err != nil {
		return "", err
	}
	job.Filename = path
	if isolate || !regular {
		return "", nil
	}
	if job.App, err = openApp(filepath.Dir(path)); err != nil {
		return "", err
	}
	job.Filename = wasmpy.AppMount + "/" + filepath.Base(path)
	return filepath.Dir(path), nil
}

// moduleProgram mounts the current directory for -m MODULE when MODULE's
// top-level package or module is there, as python3 -m would import it
// from there; otherwise (a standard or installed module) nothing. It
// returns the path of what it mounts, if anything.
func moduleProgram(job *wasmpy.Job, isolate bool) (string, error) {
	top, _, _ := strings.Cut(job.Module, ".")
	if isolate || top == "" {
		return "", nil
	}
	if !exists(top+".py") && !isDir(top) {
		return "", nil
	}
	app, err := openApp(".")
	if err != nil {
		return "", err
	}
	job.App = app
	return ".", nil
}

func openApp(path string) (*wasmpy.App, error) {
	app, err := wasmpy.OpenApp(path)
	if err != nil {
		return nil, usageErr("%s", strings.TrimPrefix(err.Error(), "wasmpy: "))
	}
	return app, nil
}

// isZipapp reports whether path is a zip file, as python3 tells a zipapp
// from a script: by its name (.pyz, .pyzw, .zip) or its content (a zip,
// with or without a #! line before it).
func isZipapp(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".pyz", ".pyzw", ".zip":
		return true
	case ".py":
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 4)
	if _, err := io.ReadFull(f, head); err != nil {
		return false
	}
	if bytes.Equal(head, []byte("PK\x03\x04")) {
		return true
	}
	if !bytes.HasPrefix(head, []byte("#!")) {
		return false
	}
	// A zip's end record is in its last 64 KiB + 22 bytes.
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	off := max(fi.Size()-(64<<10+22), 0)
	tail := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(tail, off); err != nil && err != io.EOF {
		return false
	}
	return bytes.Contains(tail, []byte("PK\x05\x06"))
}

func exists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
