package engine

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A run given no file system sees an empty, unwritable / (the mount the
// snapshot was made with is still there); the standard library stays.
func TestRunWithoutFS(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *Engine) {
		out := runOn(t, e, &Run{Code: `
import os, json
print(os.listdir("/"), os.getcwd())
for fn in (lambda: open("x", "w"), lambda: os.mkdir("/d"), lambda: open("/etc/passwd")):
    try:
        fn()
        print("allowed")
    except OSError as e:
        print(type(e).__name__)
`})
		require.Nil(t, out.Failure, string(out.Stderr))
		require.Equal(t, "[] /\nFileNotFoundError\nOSError\nFileNotFoundError\n", string(out.Stdout))
	})
}
