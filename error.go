package wasmpy

import (
	"errors"
	"fmt"

	"github.com/wasmpy/wasmpy/internal/engine"
)

// Kind says how a run failed: one of a closed set, the JSON error.kind.
type Kind string

// The kinds of Error.
const (
	KindSyntax    Kind = "syntax"    // the code does not parse
	KindException Kind = "exception" // an uncaught exception; Type names its class
	KindExit      Kind = "exit"      // sys.exit with a non-zero status
	KindTimeout   Kind = "timeout"   // the wall-clock limit ran out
	KindMemory    Kind = "memory"    // the memory limit was hit
	KindOutput    Kind = "output"    // stdout or stderr passed the output limit
	KindFuel      Kind = "fuel"      // the fuel budget ran out
	KindInternal  Kind = "internal"  // the interpreter itself failed
	// KindInterrupted: a KeyboardInterrupt the script did not catch (see
	// Job.Interrupt), or a run stopped by canceling its context; exit 130.
	KindInterrupted Kind = "interrupted"
)

// Error says why a run failed. It is the guest's failure, reported in
// Result.Error (and as an error by Result.Err), never Run's own error.
type Error struct {
	Kind      Kind   `json:"kind"`
	Type      string `json:"type,omitempty"` // the Python exception class, for exceptions
	Message   string `json:"message"`
	Traceback string `json:"traceback,omitempty"`
	Line      int    `json:"line,omitempty"` // for syntax errors
}

func (e *Error) Error() string {
	if e.Type != "" {
		return fmt.Sprintf("wasmpy: %s: %s: %s", e.Kind, e.Type, e.Message)
	}
	return fmt.Sprintf("wasmpy: %s: %s", e.Kind, e.Message)
}

func newError(f *engine.Failure) *Error {
	if f == nil {
		return nil
	}
	return &Error{Kind: Kind(f.Kind), Type: f.Type, Message: f.Message, Traceback: f.Traceback, Line: f.Line}
}

// PreloadError is New's error when a module of Config.Preload does not
// import; Line is the one line that says which module and why.
type PreloadError struct{ Line string }

func (e *PreloadError) Error() string { return e.Line }

// ExitCode is the process exit status wasmpy gives a run that ended with
// this kind of failure (124 timeout, 123 fuel, 122 output, 121 memory,
// 120 internal, 130 interrupted); exit and exception keep the guest's.
func (k Kind) ExitCode() int { return engine.ExitCode(string(k)) }

var (
	// ErrNoCode is returned by Run for a Job without code.
	ErrNoCode = errors.New("wasmpy: job has no code")
	// ErrClosed is returned by Run on a Sandbox that is closed, or closing.
	ErrClosed = errors.New("wasmpy: sandbox closed")
	// ErrNoMain is returned by Run for a job that runs its App's
	// __main__.py (no Code, no Module) where the App has none.
	ErrNoMain = errors.New("wasmpy: the app has no __main__.py")
)
