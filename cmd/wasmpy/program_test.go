package main

import (
	"archive/zip"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(data), 0o644))
	}
}

// exec runs what python3 runs, with what python3 would import mounted at /app.
func TestExecPrograms(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"app/main.py":         "import sys, helper\nprint(helper.X, __file__, sys.argv)\n",
		"app/helper.py":       "X = 'helper'\n",
		"app/__main__.py":     "import sys\nprint('dir', __file__, sys.argv)\n",
		"app/pkg/__init__.py": "",
		"app/pkg/__main__.py": "import sys\nfrom . import mod\nprint('pkg', mod.Y, sys.argv)\n",
		"app/pkg/mod.py":      "Y = 2\n",
		"empty/x.py":          "",
	})
	app := filepath.Join(dir, "app")

	code, out, errOut := wasmpyCLI(t, "", "exec", filepath.Join(app, "main.py"), "a")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "helper /app/main.py ['/app/main.py', 'a']\n", out)

	code, out, errOut = wasmpyCLI(t, "", "exec", app, "b")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "dir /app/__main__.py ['/app', 'b']\n", out)

	zipPath := filepath.Join(dir, "app.pyz")
	f, err := os.Create(zipPath)
	require.NoError(t, err)
	zw := zip.NewWriter(f)
	w, err := zw.Create("__main__.py")
	require.NoError(t, err)
	w.Write([]byte("import sys\nprint('zip', sys.argv)\n"))
	require.NoError(t, zw.Close())
	require.NoError(t, f.Close())
	code, out, errOut = wasmpyCLI(t, "", "exec", zipPath, "c")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "zip ['/app', 'c']\n", out)

	t.Chdir(app)
	code, out, errOut = wasmpyCLI(t, "", "exec", "-m", "pkg", "d")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "pkg 2 ['/app/pkg/__main__.py', 'd']\n", out, "-m finds the package in the current directory, as python3 does")

	// -P mounts nothing of the host, as python3 -P leaves the path alone.
	code, _, errOut = wasmpyCLI(t, "", "exec", "-P", "-m", "pkg")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "No module named pkg")
	code, _, errOut = wasmpyCLI(t, "", "exec", "-P", "main.py")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "ModuleNotFoundError: No module named 'helper'")
	code, out, errOut = wasmpyCLI(t, "", "exec", "-c", "import os; print(os.listdir('/app'))")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "[]\n", out, "-c mounts nothing")

	// A script from a pipe (<(...)) is read as it comes: nothing peeked at, nothing mounted.
	fifo := filepath.Join(dir, "pipe.py")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	go func() {
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Write([]byte("import os\nprint('piped', os.listdir('/app'))\n"))
			w.Close()
		}
	}()
	code, out, errOut = wasmpyCLI(t, "", "exec", fifo)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "piped []\n", out)

	code, _, errOut = wasmpyCLI(t, "", "exec", filepath.Join(dir, "empty"))
	require.Equal(t, 2, code)
	require.Equal(t, "wasmpy: can't find '__main__' module in \""+filepath.Join(dir, "empty")+"\"\n", errOut)

	// A FIFO as DIR's __main__.py is refused, never opened to wait for a writer.
	fifoMain := filepath.Join(dir, "fifoapp", "__main__.py")
	require.NoError(t, os.MkdirAll(filepath.Dir(fifoMain), 0o755))
	require.NoError(t, syscall.Mkfifo(fifoMain, 0o600))
	done := make(chan struct{})
	go func() { // should exec hang, free it, so the test fails rather than hangs
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			if fd, err := syscall.Open(fifoMain, syscall.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				syscall.Close(fd)
			}
		}
	}()
	code, _, errOut = wasmpyCLI(t, "", "exec", "--timeout", "5s", filepath.Dir(fifoMain))
	close(done)
	require.Equal(t, 2, code)
	require.Equal(t, "wasmpy: "+filepath.Dir(fifoMain)+": __main__.py is not a plain file (a pipe, a device, a link out or a hard link): refused\n", errOut)

	bad := filepath.Join(dir, "bad.pyz")
	require.NoError(t, os.WriteFile(bad, []byte("PK\x03\x04 not really"), 0o644))
	code, out, errOut = wasmpyCLI(t, "", "exec", bad)
	require.Equal(t, 2, code)
	require.Empty(t, out)
	require.Equal(t, "wasmpy: "+bad+": not a directory, nor a valid zip file\n", errOut)
}
