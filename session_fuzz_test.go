package wasmpy_test

import (
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
)

// FuzzRestoreSession feeds RestoreSession saved sessions whose memory and
// overlay parts are arbitrary but whose envelope is sound (a valid
// header, the checksum right), so the fuzzer reaches the page table and
// overlay checks: it must refuse with an error or restore, never panic.
func FuzzRestoreSession(f *testing.F) {
	sb := testSandbox(f)
	if sb.Interpreter().Kind != "core" {
		f.Skip("sessions need the core interpreter build")
	}
	sess, err := sb.NewSession(context.Background())
	require.NoError(f, err)
	res, err := sess.Run(context.Background(), wasmpy.Job{Code: "x = 1\nwrite_file('a', 'b')", Grants: files})
	require.NoError(f, err)
	require.NoError(f, res.Err())
	var saved bytes.Buffer
	require.NoError(f, sess.Save(&saved))
	require.NoError(f, sess.Close())
	raw := saved.Bytes()
	n := len("wasmpy-session\n") + 1
	hl := int(binary.LittleEndian.Uint32(raw[n:]))
	head := raw[:n+4+hl]
	zr := flate.NewReader(bytes.NewReader(raw[n+4+hl : len(raw)-sha256.Size]))
	var parts [2][]byte
	for i := range parts {
		var size [8]byte
		_, err := io.ReadFull(zr, size[:])
		require.NoError(f, err)
		parts[i] = make([]byte, binary.LittleEndian.Uint64(size[:]))
		_, err = io.ReadFull(zr, parts[i])
		require.NoError(f, err)
	}
	f.Add(parts[0], parts[1])
	f.Add(parts[0][:12], []byte(`{"workspace":{"nodes":[{"path":"../x","data":"eA=="}]}}`))
	f.Add([]byte{0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 255, 255, 255, 255, 1, 0, 0, 0}, []byte(`{}`))
	f.Fuzz(func(t *testing.T, mem, overlay []byte) {
		var b bytes.Buffer
		b.Write(head)
		zw, _ := flate.NewWriter(&b, flate.BestSpeed)
		for _, p := range [][]byte{mem, overlay} {
			zw.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(p))))
			zw.Write(p)
		}
		zw.Close()
		sum := sha256.Sum256(b.Bytes())
		b.Write(sum[:])
		s, err := sb.RestoreSession(context.Background(), &b)
		if err == nil {
			s.Close()
		}
	})
}
