package resident

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
)

var (
	errClientGone = errors.New("the client is gone")
	errBrokenPipe = errors.New("the client's reader is gone")
)

// run serves one client's exec run as exec would in the client:
// the same streams, terminal and signal handling, on the client's own
// stdin, stdout and stderr.
func (s *Server) run(conn *Conn, rj *Job, stdin, stdout, stderr *os.File) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 4)
	go func() { // the client's signals; its end (killed, say) stops the run
		for {
			var m Request
			files, err := conn.Recv(&m)
			closeFiles(files)
			if err != nil {
				cancel(errClientGone)
				return
			}
			var sig os.Signal = os.Interrupt
			if m.Signal == "SIGTERM" {
				sig = syscall.SIGTERM
			}
			select {
			case sigs <- sig:
			default: // as signal.Notify drops what its channel cannot hold
			}
		}
	}()
	l := s.get(rj.Config)
	defer s.release(l)
	select {
	case <-l.ready:
	case sig := <-sigs:
		status := console.ExitSIGINT
		if sig == syscall.SIGTERM {
			status = console.ExitSIGTERM
		}
		conn.Send(Reply{Result: console.NotRun(status, "interrupted while the sandbox was loading"), AtLineStart: true})
		return
	case <-ctx.Done():
		return
	}
	if l.err != nil {
		conn.Send(Reply{Fallback: console.OneLine(l.err)}) // the client says it as it would have
		return
	}
	job := wasmpy.Job{Code: rj.Code, Filename: rj.Filename, Args: rj.Args, Module: rj.Module, Limits: rj.Limits, Grants: rj.Grants, HTTP: rj.HTTP,
		AllowImports: rj.Imports, Tier: rj.Tier}
	if rj.App != "" {
		app, err := wasmpy.OpenApp(rj.App)
		if err != nil {
			conn.Send(Reply{Fallback: console.OneLine(err)})
			return
		}
		defer app.Close()
		job.App = app
	}
	switch rj.Stdin {
	case "fd":
		in, err := newStdinReader(stdin)
		if err != nil {
			conn.Send(Reply{Fallback: console.OneLine(err)})
			return
		}
		defer in.Close()
		job.Stdin = in
	case "bytes":
		job.Stdin = bytes.NewReader(rj.Input)
	}
	pipes := &brokenPipe{cancel: cancel}
	var out *console.Streams
	var term *console.Terminal
	if !rj.JSON {
		out = console.NewStreams(pipes.writer(stdout, 1), pipes.writer(stderr, 2))
		job.Stdout, job.Stderr = out.Stdout(), out.Stderr()
		term = console.NewTerminal(stdin, stdout, out.Flush)
	}
	res, stop, err := console.Run(ctx, l.sb.Run, &job, term, sigs)
	if out != nil {
		out.Flush()
	}
	rep := Reply{Result: res, Stop: stop, AtLineStart: out == nil || out.AtLineStart(), Broken: pipes.broken()}
	if err != nil {
		rep.Result, rep.Err = nil, console.OneLine(err)
	}
	if rj.Out && res != nil {
		rep.Files = map[string][]byte{}
		for _, f := range res.Files {
			if b, ok := res.File(f.Path); ok {
				rep.Files[f.Path] = b
			}
		}
	}
	s.mu.Lock()
	s.runs++ // before the reply: a client that has it sees the run counted
	s.mu.Unlock()
	conn.Send(rep)
}

// brokenPipe notices when the reader of the client's stdout or stderr has
// gone (EPIPE): the client would have died of SIGPIPE there, so the run
// stops and nothing more is written to either stream.
type brokenPipe struct {
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	fd     int
}

func (b *brokenPipe) writer(f *os.File, fd int) io.Writer { return pipeWriter{b, f, fd} }

func (b *brokenPipe) broken() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fd
}

type pipeWriter struct {
	b  *brokenPipe
	f  *os.File
	fd int
}

func (w pipeWriter) Write(p []byte) (int, error) {
	if w.b.broken() != 0 {
		return 0, errBrokenPipe
	}
	n, err := w.f.Write(p)
	if errors.Is(err, syscall.EPIPE) {
		w.b.mu.Lock()
		if w.b.fd == 0 {
			w.b.fd = w.fd
		}
		w.b.mu.Unlock()
		w.b.cancel(errBrokenPipe)
	}
	return n, err
}

// Fd lets the terminal checks see the client's stream.
func (w pipeWriter) Fd() uintptr { return w.f.Fd() }

// stdinReader reads the client's stdin as the script asks for it, waiting
// in poll(2) beside a pipe that Close writes to: a read must not outlive
// the run, left blocked on the client's terminal to take the line its user
// types next to the shell.
type stdinReader struct {
	f          *os.File
	stop, wake *os.File
	once       sync.Once
}

func newStdinReader(f *os.File) (*stdinReader, error) {
	stop, wake, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	return &stdinReader{f: f, stop: stop, wake: wake}, nil
}

func (r *stdinReader) Read(p []byte) (int, error) { return pollRead(r.f, r.stop, p) }

// Close ends a Read in progress and every later one.
func (r *stdinReader) Close() error {
	r.once.Do(func() { r.wake.Close() })
	return nil
}

// ForwardSignals sends the resident the signals a client gets during its
// run; stop ends that and returns what it sent.
func ForwardSignals(conn *Conn, sigs chan os.Signal) (stop func() []os.Signal) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var sent []os.Signal
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case s := <-sigs:
				name := "SIGINT"
				if s == syscall.SIGTERM {
					name = "SIGTERM"
				}
				sent = append(sent, s)
				conn.Send(Request{Signal: name})
			case <-done:
				return
			}
		}
	}()
	return func() []os.Signal {
		close(done)
		wg.Wait()
		return sent
	}
}
