package wasmpy

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/wasmpy/wasmpy/internal/engine"
	"github.com/wasmpy/wasmpy/internal/hostfile"
	"github.com/wasmpy/wasmpy/workspace"
)

// AppMount is where a job's App appears in the guest, read-only; it is
// also the first entry of sys.path.
const AppMount = engine.AppMount

// Bounds on a zipapp: OpenApp refuses a bigger one. (A zipapp is held in
// memory; a directory is read as the guest asks and has no such bound.)
const (
	MaxAppZipBytes = 64 << 20  // the zip file
	MaxAppBytes    = 256 << 20 // its files, uncompressed
	MaxAppFiles    = 20000     // its entries
)

// App is a multi-file program on the host: a directory or a zipapp,
// served read-only (see Job.App). Close it when its runs are done.
type App struct {
	fsys  fs.FS
	close func() error
}

// OpenApp opens the program at path: a directory (served under the rules
// of workspace.Dir: symlinks only inside it, names starting with "."
// hidden), or a zip file such as `python3 -m zipapp` writes (a .pyz,
// with or without a #! line), checked whole: a corrupt zip, an entry
// whose name leaves it ("../x", "/x") or appears twice, or more than
// MaxAppFiles entries or MaxAppBytes of files is refused, naming the
// file and the reason.
func OpenApp(path string) (*App, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("wasmpy: %s: %w", path, unwrapPathError(err))
	}
	if fi.IsDir() {
		d, err := workspace.OpenDir(path)
		if err != nil {
			return nil, err
		}
		return &App{fsys: d, close: d.Close}, nil
	}
	data, err := hostfile.ReadFile(path, MaxAppZipBytes) // checked again on the open file
	switch {
	case errors.Is(err, hostfile.ErrNotRegular):
		return nil, fmt.Errorf("wasmpy: %s: neither a directory nor a zip file", path)
	case errors.Is(err, hostfile.ErrTooLarge):
		return nil, fmt.Errorf("wasmpy: %s: a zipapp of %s; the limit is %d MiB", path, hostfile.Size(fi.Size()), MaxAppZipBytes>>20)
	case err != nil:
		return nil, fmt.Errorf("wasmpy: %w", err)
	}
	zr, err := openAppZip(data)
	if err != nil {
		return nil, fmt.Errorf("wasmpy: %s: %v", path, err)
	}
	return &App{fsys: zr, close: func() error { return nil }}, nil
}

// openAppZip checks a zipapp's entries before anything is served.
func openAppZip(data []byte) (*zip.Reader, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if errors.Is(err, zip.ErrFormat) {
		return nil, errors.New("not a directory, nor a valid zip file")
	}
	if err != nil {
		return nil, fmt.Errorf("a corrupt zip file (%s)", strings.TrimPrefix(err.Error(), "zip: "))
	}
	if len(zr.File) > MaxAppFiles {
		return nil, fmt.Errorf("%d entries; the limit is %d", len(zr.File), MaxAppFiles)
	}
	seen := map[string]bool{}
	var total uint64
	for _, f := range zr.File {
		name := strings.TrimSuffix(f.Name, "/")
		if !fs.ValidPath(name) || strings.Contains(f.Name, `\`) || name == "." {
			return nil, fmt.Errorf("entry %q: not a relative path inside the zip", f.Name)
		}
		if seen[name] {
			return nil, fmt.Errorf("entry %q appears twice", f.Name)
		}
		seen[name] = true
		if total += f.UncompressedSize64; total > MaxAppBytes {
			return nil, fmt.Errorf("its files hold more than %d MiB uncompressed, the limit", MaxAppBytes>>20)
		}
	}
	return zr, nil
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Open opens a file of the program, for fs.FS.
func (a *App) Open(name string) (fs.File, error) { return a.fsys.Open(name) }

// Close releases the program's directory.
func (a *App) Close() error { return a.close() }

// checkApp checks that a job's App has what the job runs.
func checkApp(job Job) error {
	if job.App == nil || job.Code != "" || job.Module != "" {
		return nil
	}
	fi, err := fs.Stat(job.App, "__main__.py")
	if err != nil || fi.IsDir() {
		return ErrNoMain
	}
	return nil
}
