package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/assets"
)

// Each engine makes the image by running the interpreter's initialisation
// itself, over its own WASI; what the guest keeps of what WASI told it
// (rights, file types, sizes) lands in the image. The images must be the
// same bytes, or a session's state (pages over the image) made on one
// engine would be laid over another image on the other.
func TestImageSameOnEachEngine(t *testing.T) {
	if len(Engines()) < 2 {
		t.Skip("one engine in this binary (go test -tags wasmtime adds wasmtime)")
	}
	interp, err := assets.Load(assets.Options{Select: os.Getenv("WASMPY_INTERPRETER")})
	require.NoError(t, err)
	if interp.Kind != assets.Core {
		t.Skip("images are the core build's")
	}
	// A cache of its own, so that each engine makes its image now, with
	// the compiled code of the shared one (compiling is slow, and not
	// what is tested).
	cache, err := assets.DefaultCacheDir()
	require.NoError(t, err)
	var images [][]byte
	for _, name := range Engines() {
		dir := t.TempDir() // the engines share a cache's image: one each
		for _, d := range []string{"compiled", "prepared", "wasmtime/compiled"} {
			require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, d)), 0o755))
			require.NoError(t, os.Symlink(filepath.Join(cache, "engine", d), filepath.Join(dir, d)))
		}
		e, err := New(context.Background(), Config{Interpreter: interp, CacheDir: dir, Engine: name})
		require.NoError(t, err, name)
		defer e.Close(context.Background())
		b, err := e.baseView()
		require.NoError(t, err)
		images = append(images, b)
	}
	a, b := images[0], images[1]
	require.Equal(t, len(a), len(b), "image sizes")
	var differ []int
	for i := 0; i < len(a); i += pageSize {
		if string(a[i:i+pageSize]) != string(b[i:i+pageSize]) {
			differ = append(differ, i/pageSize)
		}
	}
	require.Empty(t, differ, "pages of the image that differ between %v", Engines())
}
