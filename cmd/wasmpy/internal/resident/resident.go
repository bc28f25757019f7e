//go:build unix

package resident

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Dir returns the per-user directory of the socket, making it if need be:
// $XDG_RUNTIME_DIR/wasmpy, else wasmpy/run in the user cache dir. It refuses
// a directory that another user owns or that others may enter.
func Dir() (string, error) {
	var dir string
	if rt := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(rt) {
		dir = filepath.Join(rt, "wasmpy")
	} else {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("wasmpy: resident: no runtime or cache dir: %w", err)
		}
		dir = filepath.Join(cache, "wasmpy", "run")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("wasmpy: resident: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return "", fmt.Errorf("wasmpy: resident: %s: %w", dir, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return "", fmt.Errorf("wasmpy: resident: %s is not a directory", dir)
	case int(st.Uid) != os.Getuid():
		return "", fmt.Errorf("wasmpy: resident: %s belongs to uid %d, not to this user", dir, st.Uid)
	case st.Mode&0o077 != 0:
		return "", fmt.Errorf("wasmpy: resident: %s has mode %#o: want 0700", dir, st.Mode&0o777)
	}
	return dir, nil
}

// Listener accepts clients of the user's resident.
type Listener struct {
	ln     *net.UnixListener
	socket string
	lock   *os.File
}

// Listen takes the resident's lock (ErrRunning if another resident holds
// it) and listens on its socket, replacing a socket file left by one that
// died.
func Listen(socket, lock string) (*Listener, error) {
	f, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("wasmpy: resident: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrRunning
		}
		return nil, fmt.Errorf("wasmpy: resident: lock %s: %w", lock, err)
	}
	if err := os.Remove(socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		f.Close()
		return nil, fmt.Errorf("wasmpy: resident: %w", err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: socket, Net: "unix"})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("wasmpy: resident: %w", err)
	}
	ln.SetUnlinkOnClose(false) // Close removes it only while it holds the lock
	if err := os.Chmod(socket, 0o600); err != nil {
		ln.Close()
		f.Close()
		return nil, fmt.Errorf("wasmpy: resident: %w", err)
	}
	return &Listener{ln: ln, socket: socket, lock: f}, nil
}

// Accept waits for the next client of the same user; connections from
// other users are closed unanswered.
func (l *Listener) Accept() (*Conn, error) {
	for {
		c, err := l.ln.AcceptUnix()
		if err != nil {
			return nil, err
		}
		if err := checkPeer(c); err != nil {
			c.Close()
			continue
		}
		return &Conn{c: c, maxRecv: MaxRequest, maxSend: MaxReply}, nil
	}
}

// Close stops listening, removes the socket and releases the lock, so
// that a new resident can start while this one finishes its runs.
func (l *Listener) Close() error {
	err := l.ln.Close()
	os.Remove(l.socket)
	l.lock.Close()
	return err
}

// Dial connects to the resident listening on socket, if it is the user's
// own; ErrNotRunning if none listens.
func Dial(socket string) (*Conn, error) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: socket, Net: "unix"})
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, ErrNotRunning
		}
		return nil, fmt.Errorf("wasmpy: resident: %w", err)
	}
	if err := checkPeer(c); err != nil {
		c.Close()
		return nil, err
	}
	return &Conn{c: c, maxRecv: MaxReply, maxSend: MaxRequest}, nil
}

// Conn is one client's connection: JSON messages, each with a length
// prefix, the first of them with the client's descriptors. The resident's
// end receives requests (at most MaxRequest) and sends replies; the
// client's the other way round.
type Conn struct {
	c                *net.UnixConn
	maxRecv, maxSend int
}

// Send writes v as one message, passing files along with it.
func (c *Conn) Send(v any, files ...*os.File) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(body) > c.maxSend {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(body), c.maxSend)
	}
	frame := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), uint32(len(body)))
	frame = append(frame, body...)
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		oob = unix.UnixRights(fds...)
	}
	n, _, err := c.c.WriteMsgUnix(frame, oob, nil)
	if err != nil || n == len(frame) {
		return err
	}
	_, err = c.c.Write(frame[n:])
	return err
}

// Recv reads the next message into v and returns the files that came with
// it (the caller closes them). io.EOF means the peer closed the connection.
func (c *Conn) Recv(v any) ([]*os.File, error) {
	var head [4]byte
	oob := make([]byte, unix.CmsgSpace(4*maxFiles))
	n, oobn, _, _, err := c.c.ReadMsgUnix(head[:], oob)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, io.EOF
	}
	files, err := parseRights(oob[:oobn])
	if err != nil {
		return nil, err
	}
	fail := func(err error) ([]*os.File, error) {
		for _, f := range files {
			f.Close()
		}
		return nil, err
	}
	if _, err := io.ReadFull(c.c, head[n:]); err != nil {
		return fail(unexpected(err))
	}
	size := binary.BigEndian.Uint32(head[:])
	if uint64(size) > uint64(c.maxRecv) {
		return fail(fmt.Errorf("%w: %d bytes announced, the limit is %d", ErrTooLarge, size, c.maxRecv))
	}
	// Grown as the body arrives, not allocated as announced.
	body, err := io.ReadAll(io.LimitReader(c.c, int64(size)))
	if err != nil {
		return fail(unexpected(err))
	}
	if len(body) < int(size) {
		return fail(io.ErrUnexpectedEOF)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fail(fmt.Errorf("wasmpy: resident: bad message: %w", err))
	}
	return files, nil
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func parseRights(oob []byte) ([]*os.File, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("wasmpy: resident: control message: %w", err)
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			files = append(files, os.NewFile(uintptr(fd), fmt.Sprintf("fd %d", fd)))
		}
	}
	return files, nil
}

// SetReadDeadline bounds the wait for the next message (zero: none).
func (c *Conn) SetReadDeadline(t time.Time) error { return c.c.SetReadDeadline(t) }

// Close ends the connection.
func (c *Conn) Close() error { return c.c.Close() }

// CloseWrite tells the peer that nothing more comes, keeping the
// connection open for what it still sends.
func (c *Conn) CloseWrite() error { return c.c.CloseWrite() }
