package engine

import (
	"archive/zip"
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// A zip that is not the stdlib's layout is refused with the reason, before
// any interpreter starts on it.
func TestStdlibFSRefuses(t *testing.T) {
	_, err := stdlibFS([]byte("not a zip"))
	require.ErrorContains(t, err, "the standard library zip")

	// What build.sh wrote before the stdlib carried its sources.
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	_, err = zw.Create("os.pyc")
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	_, err = stdlibFS(buf.Bytes())
	require.ErrorContains(t, err, "older build.sh; run `make`")
}
