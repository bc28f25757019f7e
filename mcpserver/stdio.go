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
// large) and carries on, so a client's mistake never ends its session; so
// is a batch the SDK would refuse by ending the session (any batch once the
// negotiated protocol is 2025-06-18 or later, which dropped batching, or
// before it is known; an empty one; one with a member that is no message, a
// notification, or a request id already in use). At
// EOF on in it answers every request it passed on first (all but those the
// client cancelled): the SDK drops what is still running when its input
// ends, and a client may well close stdin right after its last request.
func NewStdioTransport(in io.Reader, out io.Writer) mcp.Transport {
	p := newPending()
	w := &lockedWriter{w: out, p: p}
	pr, pw := io.Pipe()
	r := &closeSignal{PipeReader: pr, closed: make(chan struct{})}
	go func() {
		err := filterMessages(in, pw, w, p)
		if err == nil {
			p.drain(r.closed)
		}
		pw.CloseWithError(err)
	}()
	return &mcp.IOTransport{Reader: r, Writer: w}
}

// filterMessages copies the lines of in that are JSON-RPC messages (or
// batches) to good, noting their requests in p, and answers the others on
// reply. It returns nil at EOF.
func filterMessages(in io.Reader, good io.Writer, reply io.Writer, p *pending) error {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLine(r, MaxMessageBytes)
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			if msgs, problem, id := check(line, tooLong, p); problem != nil {
				if werr := writeError(reply, id, problem); werr != nil {
					return werr
				}
			} else {
				p.asked(msgs)
				if _, werr := good.Write(append(line, '\n')); werr != nil {
					return werr
				}
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

// check returns the messages of a line (one, or a batch's), or the JSON-RPC
// error for a line that is no message or a batch p refuses, with the
// request id when one can be read from it.
func check(line []byte, tooLong bool, p *pending) ([]jsonrpc.Message, *jsonrpc.Error, any) {
	if tooLong {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("message larger than %d bytes", MaxMessageBytes)}, nil
	}
	if !json.Valid(line) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "parse error: the line is not JSON"}, nil
	}
	if t := bytes.TrimSpace(line); t[0] == '[' {
		msgs, problem := p.batch(t)
		if problem != "" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: " + problem}, nil
		}
		return msgs, nil, nil
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		var probe struct {
			ID any `json:"id"`
		}
		json.Unmarshal(line, &probe)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: " + err.Error()}, validID(probe.ID)
	}
	return []jsonrpc.Message{msg}, nil, nil
}

// decodeBatch returns the valid messages of a JSON array of them.
func decodeBatch(b []byte) []jsonrpc.Message {
	var raws []json.RawMessage
	json.Unmarshal(b, &raws)
	var msgs []jsonrpc.Message
	for _, raw := range raws {
		if m, err := jsonrpc.DecodeMessage(raw); err == nil {
			msgs = append(msgs, m)
		}
	}
	return msgs
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

// batchesUntil is the first MCP protocol version without JSON-RPC batches.
const batchesUntil = "2025-06-18"

// pending is the client's requests passed on to the SDK and not yet
// answered or cancelled, and what the filter must know to pass on only the
// batches the SDK accepts.
type pending struct {
	mu      sync.Mutex
	ids     map[jsonrpc.ID]bool
	changed chan struct{} // signalled when ids shrinks
	// inBatch is the ids of requests passed on in a batch and not yet
	// answered (cancelled or not: the SDK tracks them until it answers).
	inBatch map[jsonrpc.ID]bool
	// initID is the id of the initialize request passed on, version the
	// protocol version its answer negotiated ("" until then).
	initID  *jsonrpc.ID
	version string
}

func newPending() *pending {
	return &pending{ids: map[jsonrpc.ID]bool{}, inBatch: map[jsonrpc.ID]bool{}, changed: make(chan struct{}, 1)}
}

// batch returns the messages of a JSON array of them if the SDK will take
// it as a batch, else why not. The SDK ends the session at a batch it
// refuses, so the filter refuses it first.
func (p *pending) batch(b []byte) ([]jsonrpc.Message, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.version == "":
		return nil, "a JSON-RPC batch before initialize has negotiated a protocol version that allows them"
	case p.version >= batchesUntil:
		return nil, fmt.Sprintf("JSON-RPC batches are not supported in protocol version %s (only before %s)", p.version, batchesUntil)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(b, &raws); err != nil {
		return nil, "a batch must be an array of JSON-RPC messages"
	}
	if len(raws) == 0 {
		return nil, "an empty batch"
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	seen := map[jsonrpc.ID]bool{}
	for i, raw := range raws {
		m, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			return nil, fmt.Sprintf("batch member %d: %v", i+1, err)
		}
		if req, ok := m.(*jsonrpc.Request); ok {
			if !req.IsCall() {
				// The SDK would wait for its answer, and so never answer the batch.
				return nil, fmt.Sprintf("batch member %d: a notification in a batch (send it on a line of its own)", i+1)
			}
			if seen[req.ID] || p.inBatch[req.ID] {
				return nil, fmt.Sprintf("batch member %d: request id %v is already in use", i+1, req.ID.Raw())
			}
			seen[req.ID] = true
		}
		msgs = append(msgs, m)
	}
	for id := range seen {
		p.inBatch[id] = true
	}
	return msgs, ""
}

// asked notes the requests among msgs, and forgets those a
// notifications/cancelled names: the SDK need not answer them.
func (p *pending) asked(msgs []jsonrpc.Message) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		switch {
		case !ok:
		case req.IsCall():
			p.ids[req.ID] = true
			if req.Method == "initialize" && p.version == "" {
				id := req.ID
				p.initID = &id
			}
		case req.Method == "notifications/cancelled":
			var params struct {
				RequestID any `json:"requestId"`
			}
			if json.Unmarshal(req.Params, &params) == nil {
				if id, err := jsonrpc.MakeID(params.RequestID); err == nil {
					p.forget(id)
				}
			}
		}
	}
}

// responses returns the responses in a message (or batch) written to the
// client.
func responses(b []byte) []*jsonrpc.Response {
	var msgs []jsonrpc.Message
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
		msgs = decodeBatch(t)
	} else if m, err := jsonrpc.DecodeMessage(t); err == nil {
		msgs = []jsonrpc.Message{m}
	}
	var out []*jsonrpc.Response
	for _, m := range msgs {
		if resp, ok := m.(*jsonrpc.Response); ok {
			out = append(out, resp)
		}
	}
	return out
}

// answering notes, before they are written, what responses tell the
// filter: the protocol version initialize negotiated, and the batch ids
// the SDK has done with. (The SDK has updated its own state already, and
// the client may send its next line as soon as it reads them.)
func (p *pending) answering(resps []*jsonrpc.Response) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, resp := range resps {
		delete(p.inBatch, resp.ID)
		if p.initID != nil && *p.initID == resp.ID {
			p.initID = nil
			var res struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if resp.Error == nil && json.Unmarshal(resp.Result, &res) == nil {
				p.version = res.ProtocolVersion
			}
		}
	}
}

// answered forgets the requests that responses, once written, answer.
func (p *pending) answered(resps []*jsonrpc.Response) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, resp := range resps {
		p.forget(resp.ID)
	}
}

func (p *pending) forget(id jsonrpc.ID) {
	if p.ids[id] {
		delete(p.ids, id)
		select {
		case p.changed <- struct{}{}:
		default:
		}
	}
}

// drain waits until every request has its answer, or until stop is closed
// (the SDK closed its end: it will answer nothing more).
func (p *pending) drain(stop <-chan struct{}) {
	for {
		p.mu.Lock()
		n := len(p.ids)
		p.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-p.changed:
		case <-stop:
			return
		}
	}
}

// closeSignal is the SDK's end of the input pipe; closed tells the filter
// that the SDK has stopped reading.
type closeSignal struct {
	*io.PipeReader
	once   sync.Once
	closed chan struct{}
}

func (r *closeSignal) Close() error {
	r.once.Do(func() { close(r.closed) })
	return r.PipeReader.Close()
}

// lockedWriter serializes whole messages from the SDK and the filter (the
// SDK writes each message in one Write), and tells p which requests they
// answer. It leaves out open at Close.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
	p  *pending
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	resps := responses(b)
	l.p.answering(resps)
	n, err := l.w.Write(b)
	if err == nil {
		l.p.answered(resps)
	}
	return n, err
}

func (l *lockedWriter) Close() error { return nil }
