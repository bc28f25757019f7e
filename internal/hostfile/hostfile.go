// Package hostfile opens the files a user hands wasmpy on the host (a saved
// session, a package set, an interpreter, a zipapp, a tokens file, a
// script): each must be what its caller expects and within a documented
// bound, checked before anything is read, so that /dev/zero, a FIFO or a
// sparse file of gigabytes is one clear error, never an endless read, a
// hang or a gigabyte of memory.
//
//	b, err := hostfile.ReadFile(path, 64<<20)
//	if err != nil {
//		return fmt.Errorf("--thing %w", err) // "--thing /dev/zero: not a regular file (a character device)"
//	}
//
// The file is opened without blocking (a FIFO waits for no writer), its
// type and size are checked on the open descriptor (no race with a rename),
// and it is read through a bound, so a file that grows meanwhile cannot
// pass it either.
package hostfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

var (
	// ErrNotRegular is a path that is no regular file (a directory, FIFO,
	// device or socket) where one is wanted.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge is a file past its bound.
	ErrTooLarge = errors.New("too large")
)

// Error is why a host file was refused: Error() is one line, the path and
// the reason ("PATH: not a regular file (a FIFO)"). It unwraps to
// ErrNotRegular, ErrTooLarge or the system's error (fs.ErrNotExist...).
type Error struct {
	Path   string
	Reason string
	Err    error
}

func (e *Error) Error() string { return e.Path + ": " + e.Reason }
func (e *Error) Unwrap() error { return e.Err }

// File is a host file open to read, at most its bound.
type File struct {
	f    *os.File
	path string
	size int64
	left int64 // bytes it may still read: one past the bound, to tell it grew
	max  int64
}

// Open opens the regular file at path, of at most max bytes.
func Open(path string, max int64) (*File, error) {
	return open(path, max, false)
}

// OpenInput opens path as python3 opens a script or its stdin: a regular
// file, or a stream (a pipe such as <(...), a terminal, a device), read up
// to max bytes; a directory or a socket is refused. A FIFO's open waits
// for its writer, as python3's does.
func OpenInput(path string, max int64) (*File, error) {
	return open(path, max, true)
}

func open(path string, max int64, stream bool) (*File, error) {
	flags := os.O_RDONLY | NonBlock
	if stream {
		flags = os.O_RDONLY
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return nil, &Error{Path: path, Reason: reason(err), Err: err}
	}
	hf, err := check(f, path, max, stream)
	if err != nil {
		f.Close()
		return nil, err
	}
	return hf, nil
}

// NonBlock is the flag to open a file with before Check, for a caller that
// opens it itself: O_NONBLOCK where FIFOs exist (a FIFO then waits for no
// writer; a regular file is read as usual).
const NonBlock = oNonblock

// Check checks f, open already (with NonBlock, if a FIFO is possible),
// as Open checks the file it opens: for a caller that must hold the
// descriptor itself (to lock it, say). Closing the File closes f.
func Check(f *os.File, path string, max int64) (*File, error) {
	return check(f, path, max, false)
}

func check(f *os.File, path string, max int64, stream bool) (*File, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, &Error{Path: path, Reason: reason(err), Err: err}
	}
	mode := fi.Mode()
	switch {
	case mode.IsRegular():
		if fi.Size() > max {
			return nil, &Error{Path: path, Err: ErrTooLarge,
				Reason: fmt.Sprintf("%s, more than the limit of %s", Size(fi.Size()), Size(max))}
		}
	case stream && mode&(fs.ModeNamedPipe|fs.ModeCharDevice|fs.ModeDevice) != 0:
	default:
		return nil, &Error{Path: path, Err: ErrNotRegular, Reason: "not a regular file (" + kind(mode) + ")"}
	}
	return &File{f: f, path: path, size: fi.Size(), left: max + 1, max: max}, nil
}

// ReadFile reads the regular file at path, of at most max bytes.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := Open(path, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadAll()
}

// ReadInput reads path as OpenInput opens it.
func ReadInput(path string, max int64) ([]byte, error) {
	f, err := OpenInput(path, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadAll()
}

// Read reads the file; past its bound it fails with an *Error (ErrTooLarge).
func (f *File) Read(p []byte) (int, error) {
	if f.left <= 0 {
		return 0, f.tooLarge()
	}
	if int64(len(p)) > f.left {
		p = p[:f.left]
	}
	n, err := f.f.Read(p)
	f.left -= int64(n)
	if f.left <= 0 {
		return n - 1, f.tooLarge() // the byte past the bound is not the caller's
	}
	if err != nil && !errors.Is(err, io.EOF) {
		err = &Error{Path: f.path, Reason: reason(err), Err: err}
	}
	return n, err
}

func (f *File) tooLarge() error {
	return &Error{Path: f.path, Err: ErrTooLarge, Reason: fmt.Sprintf("more than the limit of %s", Size(f.max))}
}

// ReadAll reads the rest of the file, sized from what it held at Open.
func (f *File) ReadAll() ([]byte, error) {
	b := make([]byte, 0, min(f.size, f.max)+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Size is the file's size when it was opened (0 for a stream).
func (f *File) Size() int64 { return f.size }

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return err.Error()
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "mode " + m.String()
}

// Size is n bytes for a message: "64 MiB", "1.2 GiB", "100 bytes".
func Size(n int64) string {
	const k = 1024
	switch {
	case n < k:
		return fmt.Sprintf("%d bytes", n)
	case n < k*k:
		return unit(n, k, "KiB")
	case n < k*k*k:
		return unit(n, k*k, "MiB")
	}
	return unit(n, k*k*k, "GiB")
}

func unit(n, u int64, name string) string {
	if n%u == 0 {
		return fmt.Sprintf("%d %s", n/u, name)
	}
	return fmt.Sprintf("%.1f %s", float64(n)/float64(u), name)
}
