package engine

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/assets"
)

func TestImageFile(t *testing.T) {
	data := bytes.Repeat([]byte("wasmpy!\x00"), 3*pageSize/8)
	want := &image{runCode: 1234, hot: []pageRun{{0, 1}, {2, 1}}}
	path := filepath.Join(t.TempDir(), "x.img")
	require.NoError(t, writeImage(path, data, want))

	img, err := openImage(path)
	require.NoError(t, err)
	defer closeImage(img)
	require.Equal(t, want.runCode, img.runCode)
	require.Equal(t, len(data), img.size)
	require.Equal(t, want.hot, img.hot)
	if img.fd >= 0 {
		mapping, err := mapImage(img, 1<<20)
		require.NoError(t, err)
		defer unmap(mapping)
		require.Equal(t, data, mapping[:len(data)])
	} else {
		require.Equal(t, data, img.data)
	}

	// Files that are not whole images are refused, not mapped.
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	for name, corrupt := range map[string][]byte{
		"magic":     append([]byte("wasmpy-image-0"), raw[14:]...),
		"truncated": raw[:len(raw)-1],
		"hot page outside the image": func() []byte {
			b := bytes.Clone(raw)
			b[imageFixedSize] = 3 // the first run starts at page 3 of 3
			return b
		}(),
		"header only": raw[:imageFixedSize],
	} {
		bad := filepath.Join(t.TempDir(), "bad.img")
		require.NoError(t, os.WriteFile(bad, corrupt, 0o600))
		_, err := openImage(bad)
		require.Error(t, err, name)
	}
}

// The engine learns which image pages a run writes and keeps them with the
// cached image, so that every later process copies them ahead too.
func TestHotPages(t *testing.T) {
	e := testEngine(t, false)
	if e.interp.Kind != assets.Core || runtime.GOOS != "linux" {
		t.Skip("hot pages are learnt for the core build on Linux")
	}
	require.NotEmpty(t, e.image.hot)
	pages := 0
	for _, r := range e.image.hot {
		require.LessOrEqual(t, int(r.start+r.n), e.image.size/pageSize)
		pages += int(r.n)
	}
	// print(1) writes a small part of the interpreter's memory.
	require.Less(t, pages, e.image.size/pageSize/4)

	cache, err := assets.DefaultCacheDir()
	require.NoError(t, err)
	img, err := openImage(imagePath(filepath.Join(cache, "engine", "snapshots"), e.key))
	require.NoError(t, err)
	defer closeImage(img)
	require.Equal(t, e.image.hot, img.hot)
}

// Close stops the runs in progress (through their fuel counter) and waits
// for them; runs after it are refused.
func TestClose(t *testing.T) {
	interp, err := assets.Load(assets.Options{Select: os.Getenv("WASMPY_INTERPRETER")})
	require.NoError(t, err)
	cache, err := assets.DefaultCacheDir()
	require.NoError(t, err)
	e, err := New(context.Background(), Config{Interpreter: interp, CacheDir: filepath.Join(cache, "engine")})
	require.NoError(t, err)
	out, err := e.Run(context.Background(), &Run{Code: "print(1)"})
	require.NoError(t, err)
	require.Equal(t, "1\n", string(out.Stdout))

	ran := make(chan *Outcome)
	go func() {
		out, err := e.Run(context.Background(), &Run{Code: "while True: pass"})
		assert.NoError(t, err)
		ran <- out
	}()
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, e.Close(context.Background()))
	select {
	case out := <-ran:
		require.NotNil(t, out.Failure)
	case <-time.After(10 * time.Second):
		t.Fatal("Close returned with a run still going")
	}
	_, err = e.Run(context.Background(), &Run{Code: "print(1)"})
	require.ErrorContains(t, err, "closed")
}

// The cached image holds the import system's view of the standard library,
// so a new stdlib zip with the same python.wasm gets an image of its own.
func TestImageKeyedByStdlib(t *testing.T) {
	interp, err := assets.Load(assets.Options{Select: os.Getenv("WASMPY_INTERPRETER")})
	require.NoError(t, err)
	if interp.Kind != assets.Core {
		t.Skip("snapshot images are made for the core build")
	}
	cache := t.TempDir()
	run := func(interp *assets.Interpreter, code string) *Outcome {
		e, err := New(context.Background(), Config{Interpreter: interp, CacheDir: cache, Unmetered: true})
		require.NoError(t, err)
		defer e.Close(context.Background())
		return runOn(t, e, &Run{Code: code})
	}
	out := run(interp, "import wasmpy_probe")
	require.NotNil(t, out.Failure)
	require.Equal(t, "ModuleNotFoundError", out.Failure.Type)

	// The same stdlib plus one module, in a process whose cache holds the
	// first one's image.
	var buf bytes.Buffer
	zr, err := zip.NewReader(bytes.NewReader(interp.Stdlib), int64(len(interp.Stdlib)))
	require.NoError(t, err)
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		require.NoError(t, zw.Copy(f))
	}
	w, err := zw.Create("wasmpy_probe.py")
	require.NoError(t, err)
	_, err = w.Write([]byte("print('probe from the new zip')\n"))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	other := *interp
	other.Stdlib = buf.Bytes()
	sum := sha256.Sum256(other.Stdlib)
	other.StdlibSHA256 = hex.EncodeToString(sum[:])
	out = run(&other, "import wasmpy_probe")
	require.Nil(t, out.Failure, string(out.Stderr))
	require.Equal(t, "probe from the new zip\n", string(out.Stdout))
	images, err := filepath.Glob(filepath.Join(cache, "snapshots", "*.img"))
	require.NoError(t, err)
	require.Len(t, images, 2)
}
