package engine

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// editorReader is a line editor: its first read ends with Ctrl-C (EINTR),
// once the test lets it; its second gives a line.
type editorReader struct {
	release chan struct{}
	n       int
}

func (e *editorReader) Read(p []byte) (int, error) {
	e.n++
	if e.n == 1 {
		<-e.release
		return 0, syscall.EINTR
	}
	return copy(p, "x\n"), nil
}

// An interrupt that reaches the guest before the editor's own EINTR does
// is served once: the next read asks the editor again, and gets its line.
func TestStdinInterruptBeforeSourceEINTR(t *testing.T) {
	src := &editorReader{release: make(chan struct{})}
	s := newStdin(src)
	done, wake := make(chan struct{}), make(chan struct{}, 1)
	wake <- struct{}{}
	buf := make([]byte, 16)
	n, err := s.read(buf, done, wake)
	require.Equal(t, 0, n)
	require.Equal(t, experimentalsys.EINTR, err)
	close(src.release) // the editor's EINTR arrives late
	n, err = s.read(buf, done, wake)
	require.NoError(t, err)
	require.Equal(t, "x\n", string(buf[:n]))
}
