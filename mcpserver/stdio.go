package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxMessageBytes bounds one JSON-RPC message (one line) on stdio.
const MaxMessageBytes = mcp.DefaultMaxLineLength

// NewStdioTransport is the newline-delimited JSON-RPC transport over in and
// out (a subprocess's stdin and stdout). The SDK's own ends the session at
// the first line that is not a JSON-RPC message; this one answers such a
// line with a JSON-RPC error (parse error, invalid request, or a message too
// large) and carries on, so a client's mistake never ends its session.
func NewStdioTransport(in io.Reader, out io.Writer) mcp.Transport {
	w := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(filterMessages(in, pw, w)) }()
	return &mcp.IOTransport{Reader: pr, Writer: w}
}

// filterMessages copies the lines of in that are JSON-RPC messages (or
// batches) to good, and answers the others on reply. It returns at EOF.
func filterMessages(in io.Reader, good io.Writer, reply io.Writer) error {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLine(r, MaxMessageBytes)
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			if problem, id := check(line, tooLong); problem != nil {
				if werr := writeError(reply, id, problem); werr != nil {
					return werr
				}
			} else if _, werr := good.Write(append(line, '\n')); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// readLine reads up to the next newline; past max bytes it discards the
// rest of the line and reports it too long.
func readLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if err != bufio.ErrBufferFull {
			return bytes.TrimRight(line, "\r\n"), tooLong, err
		}
	}
}

// check returns the JSON-RPC error for a line that is no message, with the
// request id when one can be read from it.
func check(line []byte, tooLong bool) (*jsonrpc.Error, any) {
	if tooLong {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("message larger than %d bytes", MaxMessageBytes)}, nil
	}
	if !json.Valid(line) {
		return &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "parse error: the line is not JSON"}, nil
	}
	if t := bytes.TrimSpace(line); t[0] == '[' {
		return nil, nil // a batch: the SDK answers it, or refuses it, itself
	}
	var probe struct {
		ID any `json:"id"`
	}
	json.Unmarshal(line, &probe)
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: " + err.Error()}, validID(probe.ID)
	}
	return nil, nil
}

// validID is id if JSON-RPC allows it as a request id (a string or a
// number), else nil.
func validID(id any) any {
	switch id.(type) {
	case string, float64:
		return id
	}
	return nil
}

func writeError(w io.Writer, id any, e *jsonrpc.Error) error {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": e})
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// lockedWriter serializes whole messages from the SDK and the filter; the
// SDK writes each message in one Write. It leaves out open at Close.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }
