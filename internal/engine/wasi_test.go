package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero/sys"

	"github.com/wasmpy/wasmpy/workspace"
)

// memInstance is an instance that is only a memory, for calling host
// functions directly.
type memInstance struct{ mem memBytes }

func (m memInstance) export(string) exportFunc { return nil }
func (m memInstance) memory() guestMemory      { return m.mem }

// wasiFixture is a descriptor table over a workspace, the standard
// library and the streams, in a 64 KiB memory.
func wasiFixture(t testing.TB) (context.Context, memInstance) {
	ws, err := workspace.New(workspace.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { ws.Close() })
	st := newRunState(nil)
	st.bind(context.Background(), &Run{FS: ws.SysFS, Deterministic: true}, nil, io.Discard, io.Discard)
	files := newWasiFiles(st, guestEnv(), []wasiMount{{path: filesMount, fs: boundFS{st: st}}})
	t.Cleanup(files.close)
	ctx := withFiles(context.WithValue(context.Background(), stateKey{}, st), files)
	return ctx, memInstance{make(memBytes, 1<<16)}
}

// callWasi calls the WASI function name; false when it panicked with
// anything but an exit.
func callWasi(ctx context.Context, in instance, f hostFunc, stack []uint64) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			var exit *sys.ExitError
			err, _ := r.(error)
			ok = errors.As(err, &exit)
		}
	}()
	f.fn(ctx, in, stack)
	return true
}

// Every WASI function, given pointers and lengths out of range, counts that
// overflow and descriptors that do not exist, answers an errno: the guest
// is hostile, and none of it may panic the host.
func TestWasiHostileArguments(t *testing.T) {
	ctx, in := wasiFixture(t)
	values := []uint64{0, 1, 3, 0xFFFF, 0x10000, 0xFFFFFFF0, 0xFFFFFFFF, 1 << 40, ^uint64(0)}
	for _, f := range wasiFuncs {
		for _, v := range values {
			for _, w := range values {
				stack := make([]uint64, max(len(f.params), 1))
				for i := range stack {
					stack[i] = v
					if i%2 == 1 {
						stack[i] = w
					}
				}
				require.True(t, callWasi(ctx, in, f, stack), "%s(%v) panicked", f.name, stack)
			}
		}
	}
}

// A file written, read back and listed through the WASI functions alone.
func TestWasiFileRoundTrip(t *testing.T) {
	ctx, in := wasiFixture(t)
	byName := map[string]hostFunc{}
	for _, f := range wasiFuncs {
		byName[f.name] = f
	}
	call := func(name string, args ...uint64) uint64 {
		stack := append(args, 0)
		byName[name].fn(ctx, in, stack)
		return stack[0]
	}
	mem := in.mem
	copy(mem[100:], "workspace/a.txt")
	// path_open(fd 3, follow, path, len, O_CREAT, rights read|write, 0, 0, result at 200)
	require.Zero(t, call("path_open", 3, 1, 100, 15, 1, rightFdRead|rightFdWrite, 0, 0, 200))
	fd := uint64(binary.LittleEndian.Uint32(mem[200:]))
	copy(mem[300:], "hello")
	binary.LittleEndian.PutUint32(mem[400:], 300) // iovec: buf, len
	binary.LittleEndian.PutUint32(mem[404:], 5)
	require.Zero(t, call("fd_write", fd, 400, 1, 410))
	require.Equal(t, uint32(5), binary.LittleEndian.Uint32(mem[410:]))
	require.Zero(t, call("fd_seek", fd, 0, io.SeekStart, 420))
	clear(mem[300:305])
	require.Zero(t, call("fd_read", fd, 400, 1, 410))
	require.Equal(t, "hello", string(mem[300:305]))
	require.Zero(t, call("fd_close", fd))
	require.Equal(t, uint64(errnoBadf), call("fd_close", fd))
	// the directory lists ".", "..", then the file
	copy(mem[100:], "workspace")
	require.Zero(t, call("path_open", 3, 1, 100, 9, 2, rightFdRead, 0, 0, 200))
	dir := uint64(binary.LittleEndian.Uint32(mem[200:]))
	require.Zero(t, call("fd_readdir", dir, 1000, 4096, 0, 420))
	n := binary.LittleEndian.Uint32(mem[420:])
	var names []string
	for b := mem[1000 : 1000+n]; len(b) >= 24; {
		l := binary.LittleEndian.Uint32(b[16:])
		names = append(names, string(b[24:24+l]))
		b = b[24+l:]
	}
	require.Equal(t, []string{".", "..", "a.txt"}, names)
	// a path out of the mount is refused
	copy(mem[100:], "../etc")
	require.Equal(t, uint64(errnoNotcapable), call("path_open", 3, 1, 100, 6, 0, rightFdRead, 0, 0, 200))
}
