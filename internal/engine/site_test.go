package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/assets"
)

// A snapshot image holds what was preloaded from the site: each site key
// and preload list gets an image of its own, and a run sees its engine's.
func TestImageKeyedBySiteAndPreload(t *testing.T) {
	interp, err := assets.Load(assets.Options{Select: os.Getenv("WASMPY_INTERPRETER")})
	require.NoError(t, err)
	if interp.Kind != assets.Core {
		t.Skip("snapshot images are made for the core build")
	}
	cache := t.TempDir()
	site := func(answer string) fstest.MapFS {
		return fstest.MapFS{"probe.py": {Data: []byte("answer = " + answer + "\n"), Mode: 0o444}}
	}
	code := "import sys\nprint('probe' in sys.modules, __import__('probe').answer)"
	for _, tc := range []struct {
		site    fstest.MapFS
		key     string
		preload []string
		want    string
	}{
		{site("1"), "one", nil, "False 1\n"},
		{site("1"), "one", []string{"probe"}, "True 1\n"},
		{site("2"), "two", []string{"probe"}, "True 2\n"}, // same preload, other contents
		{site("1"), "one", []string{"probe"}, "True 1\n"}, // from the cache
	} {
		e, err := New(context.Background(), Config{Interpreter: interp, CacheDir: cache, Unmetered: true,
			Site: tc.site, SiteKey: tc.key, Preload: tc.preload})
		require.NoError(t, err)
		out := runOn(t, e, &Run{Code: code})
		require.Nil(t, out.Failure, string(out.Stderr))
		require.Equal(t, tc.want, string(out.Stdout))
		require.NoError(t, e.Close(context.Background()))
	}
	images, err := filepath.Glob(filepath.Join(cache, "snapshots", "*.img"))
	require.NoError(t, err)
	require.Len(t, images, 3)
}

func TestPreloadRefused(t *testing.T) {
	interp, err := assets.Load(assets.Options{Select: os.Getenv("WASMPY_INTERPRETER")})
	require.NoError(t, err)
	for _, tc := range []struct {
		preload []string
		want    string
	}{
		{[]string{"os; import evil"}, `wasmpy: preload "os; import evil": not a module name`},
		{[]string{"no_such_module"}, "wasmpy: preload no_such_module: ModuleNotFoundError: No module named 'no_such_module'"},
	} {
		_, err := New(context.Background(), Config{Interpreter: interp, Preload: tc.preload})
		var pe *PreloadError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, tc.want, err.Error())
		if interp.Kind != assets.Core {
			break // only the snapshot imports ahead
		}
	}
}
