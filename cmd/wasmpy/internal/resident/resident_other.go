//go:build !unix

package resident

import (
	"os"
	"time"
)

// Here (Windows) there is no resident: Unix sockets carrying descriptors
// and flock are what it is made of. Listen and Dial fail, and the CLI runs
// every job in its own process, as with `wasmpy resident off`.

// Dir fails: there is no resident here.
func Dir() (string, error) { return "", errUnsupported }

// Listener is never made here.
type Listener struct{}

// Listen fails: there is no resident here.
func Listen(socket, lock string) (*Listener, error) { return nil, errUnsupported }

// Accept fails.
func (l *Listener) Accept() (*Conn, error) { return nil, errUnsupported }

// Close does nothing.
func (l *Listener) Close() error { return nil }

// Dial fails: there is no resident here.
func Dial(socket string) (*Conn, error) { return nil, ErrNotRunning }

// Conn is never made here.
type Conn struct{}

// Send fails.
func (c *Conn) Send(v any, files ...*os.File) error { return errUnsupported }

// Recv fails.
func (c *Conn) Recv(v any) ([]*os.File, error) { return nil, errUnsupported }

// SetReadDeadline fails.
func (c *Conn) SetReadDeadline(t time.Time) error { return errUnsupported }

// Close does nothing.
func (c *Conn) Close() error { return nil }

// CloseWrite does nothing.
func (c *Conn) CloseWrite() error { return nil }
