package wasmpy_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/hostfuncs"
)

// Bulk bytes cross the host-call transport raw, both ways, whatever their
// content and size; text arrives as str. The guest's own errors (a value
// that is no JSON, a str that is no UTF-8) stay the guest's.
func TestHostCallBulkBytes(t *testing.T) {
	dir := t.TempDir()
	all := bytes.Repeat([]byte{0, 1, 0xfe, 0xff}, 1<<18) // 1 MiB
	for i := 0; i < 256; i++ {
		all[i] = byte(i)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mib.bin"), all, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "text.txt"), []byte("héllo \u2603\n"), 0o644))
	res := run(t, wasmpy.Job{Workspace: dir, Grants: []wasmpy.Capability{wasmpy.ReadFile, wasmpy.WriteFile}, Code: `
import hashlib, wasmpy
b = read_file("mib.bin", binary=True)
print(type(b).__name__, len(b), hashlib.sha256(b).hexdigest())
s = read_file("text.txt")
print(type(s).__name__, repr(s))
print(write_file("copy.bin", b), write_file("ba.bin", bytearray(b"\x00\xff")),
      write_file("mv.bin", memoryview(b"abcdef")[::2]), write_file("empty.bin", b""),
      write_file("t.txt", "snow \u2603"))
print(read_file("copy.bin", binary=True) == b, read_file("mv.bin"), repr(read_file("empty.bin", binary=True)))
for bad in (lambda: write_file("x", "\ud800"), lambda: write_file("x", 3),
            lambda: wasmpy._call("read_file", {"path": object()})):
    try:
        bad()
    except Exception as e:
        print(type(e).__name__, e)
loop = []
loop.append(loop)
try:
    wasmpy._call("read_file", {"path": loop})
except ValueError as e:
    print("ValueError", e)
`})
	require.Nil(t, res.Error, res.Stderr)
	want := fmt.Sprintf("bytes %d %x\n", len(all), sha256.Sum256(all)) +
		"str 'héllo ☃\\n'\n" +
		"1048576 2 3 0 8\n" +
		"True ace b''\n" +
		"UnicodeEncodeError 'utf-8' codec can't encode character '\\ud800' in position 0: surrogates not allowed\n" +
		"TypeError data must be str or bytes, not int\n" +
		"ValueError read_file: argument is not JSON-serializable: Object of type object is not JSON serializable\n" +
		"ValueError read_file: argument is not JSON-serializable: nested too deeply, or circular\n"
	require.Equal(t, want, res.Stdout)
	got, ok := res.File("copy.bin")
	require.True(t, ok)
	require.Equal(t, all, got)
	got, _ = res.File("t.txt")
	require.Equal(t, "snow \u2603", string(got))
}

// What a host call costs the guest, in fuel (deterministic): an echo round
// trip, a 1 MiB read_file and write_file. Each bound is two to four times
// what the raw transport takes and a fraction of what JSON and base64 in the
// guest took (14,600 units a round trip, 17.5 and 65.7 million for the
// read and the write).
func TestHostCallCost(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mib.bin"), make([]byte, 1<<20), 0o644))
	sb := newSandbox(t, wasmpy.Config{Interpreter: "wasmpy",
		HostFuncs: hostfuncs.Table{"echo": hostfuncs.Typed(func(ctx context.Context, a struct{ X int }) (int, error) { return a.X, nil })},
		Grants:    []wasmpy.Capability{"echo", wasmpy.ReadFile, wasmpy.WriteFile}})
	fuel := func(n int, call string) uint64 {
		res := runIn(t, sb, wasmpy.Job{Workspace: dir,
			Code: fmt.Sprintf("b = bytes(1 << 20)\nfor _ in range(%d):\n    %s\n", n, call)})
		require.Nil(t, res.Error, res.Stderr)
		return res.FuelUsed
	}
	for _, tc := range []struct {
		call  string
		n     int
		bound uint64
	}{
		{"echo(X=1)", 200, 5_000},
		{"read_file('mib.bin', binary=True)", 10, 10_000},
		{"write_file('out.bin', b)", 10, 10_000},
	} {
		per := (fuel(tc.n, tc.call) - fuel(0, tc.call)) / uint64(tc.n)
		t.Logf("%s: %d units", tc.call, per)
		require.Less(t, per, tc.bound, tc.call)
	}
}
