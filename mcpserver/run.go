package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/runs"
)

// runArgs are run_python's arguments.
type runArgs struct {
	Code      string               `json:"code"`
	SessionID string               `json:"session_id"`
	Stdin     string               `json:"stdin"`
	Args      []string             `json:"args"`
	Files     map[string]string    `json:"files"`
	Limits    runs.RequestedLimits `json:"limits"`
}

// RunOutput is run_python's structured content, whether the run succeeded
// or failed.
type RunOutput struct {
	OK              bool            `json:"ok"`
	ExecutionID     string          `json:"execution_id"` // its provenance record
	Stdout          string          `json:"stdout"`
	Stderr          string          `json:"stderr"`
	StdoutTruncated bool            `json:"stdout_truncated"`
	StderrTruncated bool            `json:"stderr_truncated"`
	Output          json.RawMessage `json:"output"` // what the code passed to submit_result, or null (Result.Output, as everywhere)
	Error           *wasmpy.Error   `json:"error"`  // why it failed: kind, type, message, traceback; null if it did not
	Files           []FileInfo      `json:"files"`  // what the run wrote, saved to the workspace
	// Images are the image files among Files (their data comes as image
	// content beside this), or why one's data was left out.
	Images []ImageInfo `json:"images,omitempty"`
	// SaveError says which written files the workspace could not keep.
	SaveError string `json:"save_error,omitempty"`
	// Session is the turn, for a run in a session.
	Session         *wasmpy.SessionTurn `json:"session,omitempty"`
	DurationMS      float64             `json:"duration_ms"`
	MemoryPeakBytes uint64              `json:"memory_peak_bytes"`
	FuelUsed        uint64              `json:"fuel_used"`
}

var runInputSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "code": {"type": "string", "minLength": 1, "description": "Python source, run as a script (__main__). Print what you want to see, or call submit_result(value) to return one JSON value."},
    "session_id": {"type": "string", "description": "Run as the next turn of this session (session_create), starting from the Python state its earlier turns left."},
    "stdin": {"type": "string", "description": "Text the script reads from sys.stdin."},
    "args": {"type": "array", "items": {"type": "string"}, "description": "sys.argv[1:]."},
    "files": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Files to put in the workspace before the run, as {relative path: UTF-8 text}; they stay for later calls."},
    "limits": {
      "type": "object",
      "description": "Tighter limits for this call; each at most the server's.",
      "properties": {
        "timeout_ms": {"type": "integer", "minimum": 1},
        "memory_bytes": {"type": "integer", "minimum": 1},
        "fuel": {"type": "integer", "minimum": 1}
      },
      "additionalProperties": false
    }
  },
  "required": ["code"],
  "additionalProperties": false
}`)

// runOutputSchema spells every property with one "type" (a value that may
// be null is an anyOf of typed branches, not a type array), as the MCP
// Inspector's portability check asks: some clients read "type" as one
// string.
var runOutputSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "ok": {"type": "boolean"},
    "execution_id": {"type": "string"},
    "stdout": {"type": "string"},
    "stderr": {"type": "string"},
    "stdout_truncated": {"type": "boolean"},
    "stderr_truncated": {"type": "boolean"},
    "output": {"description": "The value given to submit_result, or null.", "anyOf": [
      {"type": "object"}, {"type": "array"}, {"type": "string"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"}]},
    "error": {"description": "Why the run failed, or null.", "anyOf": [
      {"type": "object",
       "properties": {
         "kind": {"type": "string", "enum": ["syntax", "exception", "exit", "timeout", "memory", "output", "fuel", "internal", "interrupted"]},
         "type": {"type": "string"},
         "message": {"type": "string"},
         "traceback": {"type": "string"},
         "line": {"type": "integer"}
       },
       "required": ["kind", "message"]},
      {"type": "null"}]},
    "files": {"type": "array", "items": {"type": "object", "properties": {"path": {"type": "string"}, "size": {"type": "integer"}, "sha256": {"type": "string"}}, "required": ["path", "size"]}},
    "images": {"type": "array", "description": "Image files the run wrote (or passed to wasmpy.show()); each also comes as image content unless omitted says why not.", "items": {"type": "object", "properties": {"path": {"type": "string"}, "mime_type": {"type": "string"}, "size": {"type": "integer"}, "omitted": {"type": "string"}}, "required": ["path", "mime_type", "size"]}},
    "save_error": {"type": "string"},
    "session": {"type": "object", "description": "The session turn: id, turn, kept (false when a failed turn left the session as it was), state hashes and size.",
      "properties": {"id": {"type": "string"}, "turn": {"type": "integer"}, "kept": {"type": "boolean"}}},
    "duration_ms": {"type": "number"},
    "memory_peak_bytes": {"type": "integer"},
    "fuel_used": {"type": "integer"}
  },
  "required": ["ok", "execution_id", "stdout", "stderr", "output", "error", "files"]
}`)

// appliedLimits are the limits a run_python call gets when it asks for
// none: the service's default tier's, under the executor's and the
// server's ceilings, with the default capture's bound on output (which
// streams); the tool's description and its schema's maxima say them.
func appliedLimits(ex *runs.Executor, ceil wasmpy.Limits) (wasmpy.Limits, error) {
	tier, err := ex.ExecTier(runs.Caller{}, "")
	if err != nil {
		return wasmpy.Limits{}, err
	}
	lim, err := ex.ExecLimits(tier, runs.RequestedLimits{}, ceil)
	if err != nil {
		return wasmpy.Limits{}, err
	}
	return lim.Or(wasmpy.Limits{Output: wasmpy.DefaultLimits().Output}).Or(wasmpy.DefaultLimits()), nil
}

// runInput is run_python's input schema with the maxima of its limits: the
// limits a call gets by default, which it may lower, never raise.
func runInput(lim wasmpy.Limits) json.RawMessage {
	var schema map[string]any
	if err := json.Unmarshal(runInputSchema, &schema); err != nil {
		panic(err) // a constant
	}
	props := schema["properties"].(map[string]any)["limits"].(map[string]any)["properties"].(map[string]any)
	timeout := props["timeout_ms"].(map[string]any)
	timeout["maximum"] = max(1, lim.Timeout.Milliseconds())
	timeout["description"] = fmt.Sprintf("Wall-clock limit in milliseconds; default and most: %d (%s).", max(1, lim.Timeout.Milliseconds()), lim.Timeout)
	memory := props["memory_bytes"].(map[string]any)
	memory["maximum"] = lim.Memory
	memory["description"] = fmt.Sprintf("Memory limit in bytes; default and most: %d (%d MiB).", lim.Memory, lim.Memory>>20)
	fuel := props["fuel"].(map[string]any)
	if lim.Fuel > 0 {
		fuel["maximum"] = lim.Fuel
		fuel["description"] = fmt.Sprintf("Instruction budget (deterministic); default and most: %d.", lim.Fuel)
	} else {
		fuel["description"] = "Instruction budget (deterministic); by default none (unmetered)."
	}
	out, err := json.Marshal(schema)
	if err != nil {
		panic(err)
	}
	return out
}

func (s *Server) addRunTool() {
	lim, err := appliedLimits(s.cfg.Executor, s.cfg.ExecLimits)
	if err != nil { // New has described them already, so this does not happen
		lim = wasmpy.DefaultLimits()
	}
	s.mcp.AddTool(&mcp.Tool{
		Name:  "run_python",
		Title: "Run Python in a sandbox",
		Description: "Run Python code in an isolated sandbox and get back its stdout, stderr, the value it passed to " +
			"submit_result(value) (any JSON value), and the files it wrote. " + s.about + " " +
			"Without session_id each call starts from a clean interpreter: variables and imports do not carry over, " +
			"but files do: the working directory is this MCP session's workspace, where `files`, write_file and earlier " +
			"runs put theirs, and what the code writes there is saved back (read_file fetches it). With a session_id " +
			"(session_create), the call continues that session's Python state. " +
			"A failed run (exception, syntax error, timeout, memory, fuel, output limit) is a tool error whose " +
			"error.kind says which; stdout and stderr stream as progress notifications while it runs.",
		InputSchema:  runInput(lim),
		OutputSchema: runOutputSchema,
		Annotations:  &mcp.ToolAnnotations{Title: "Run Python", OpenWorldHint: new(bool)},
	}, s.runPython)
}

func (s *Server) runPython(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a runArgs
	if err := decodeArgs("run_python", req.Params.Arguments, &a); err != nil {
		return s.fail(err)
	}
	if strings.TrimSpace(a.Code) == "" {
		return s.fail(invalidParams(`run_python: "code" is empty`))
	}
	c, err := s.conn(req.Session)
	if err != nil {
		return s.fail(err)
	}
	// The service's default tier, within the caller's maximum; a session's
	// turn, the session's (the executor checks it against the caller's
	// maximum too).
	tier, err := s.cfg.Executor.ExecTier(c.caller, "")
	if err != nil {
		return s.fail(err)
	}
	if a.SessionID != "" {
		in, err := s.cfg.Executor.Session(ctx, a.SessionID, c.caller)
		if err != nil {
			return s.fail(err)
		}
		if tier, err = s.cfg.Executor.ExecTier(c.caller, in.Tier); err != nil {
			return s.fail(err)
		}
	}
	lim, err := s.cfg.Executor.ExecLimits(tier, a.Limits, s.cfg.ExecLimits)
	if err != nil {
		return s.fail(err)
	}
	// The output streams, so the sandbox would set no bound of its own: the
	// default capture's.
	lim = lim.Or(wasmpy.Limits{Output: wasmpy.DefaultLimits().Output})
	ws, err := s.files(req.Session)
	if err != nil {
		return s.fail(err)
	}
	paths := make([]string, 0, len(a.Files))
	for p := range a.Files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if _, err := ws.write(p, []byte(a.Files[p])); err != nil {
			return s.fail(invalidParams("run_python: files: %v", err))
		}
	}
	ereq := runs.ExecRequest{Code: a.Code, Args: a.Args, Stdin: a.Stdin, Limits: lim, Workspace: ws.dir,
		ActorID: actor(req.Session), ActorType: "mcp", Tier: tier.Name, Caller: c.caller}
	run := func(ctx context.Context) (*runs.Execution, error) { return s.cfg.Executor.Exec(ctx, ereq) }
	if a.SessionID != "" {
		run = func(ctx context.Context) (*runs.Execution, error) {
			return s.cfg.Executor.SessionExec(ctx, a.SessionID, ereq)
		}
	}
	var p *progress
	if token := req.Params.GetProgressToken(); token != nil {
		p = newProgress(ctx, req.Session, token)
		ereq.Stdout, ereq.Stderr = p.stream("stdout"), p.stream("stderr")
	}
	x, err := s.adm.Run(ctx, 0, run)
	if p != nil {
		p.flush() // before the result: a client drops progress that comes after
	}
	if err != nil {
		return s.fail(err)
	}
	out := runOutput(x)
	out.Files, out.SaveError = saveFiles(ws, x.Result)
	content := imageContent(x.Result, out)
	if x.Error != nil {
		res := toolError(renderRun(out), out)
		res.Content = append(res.Content, content...)
		return res, nil
	}
	return &mcp.CallToolResult{Content: append([]mcp.Content{&mcp.TextContent{Text: renderRun(out)}}, content...), StructuredContent: out}, nil
}

func runOutput(x *runs.Execution) *RunOutput {
	r := x.Result
	return &RunOutput{OK: r.Error == nil, ExecutionID: x.Record.ExecutionID, Stdout: r.Stdout, Stderr: r.Stderr,
		StdoutTruncated: r.StdoutTruncated, StderrTruncated: r.StderrTruncated, Output: r.Output, Error: r.Error,
		Files: []FileInfo{}, DurationMS: r.DurationMS, MemoryPeakBytes: r.MemoryPeakBytes, FuelUsed: r.FuelUsed, Session: r.Session}
}

// saveFiles carries what a run did to its workspace over to the session's
// workspace, so later runs and read_file see it: the paths it removed or
// renamed away go, then the files it wrote are written. A session turn
// keeps no files of its own (runs.ExecRequest.Workspace), so this
// directory is the one copy.
func saveFiles(ws *files, res *wasmpy.Result) ([]FileInfo, string) {
	out := []FileInfo{}
	var failed []string
	for _, p := range res.Removed() {
		if err := ws.remove(p); err != nil {
			failed = append(failed, err.Error())
		}
	}
	for _, fc := range res.Files {
		data, ok := res.File(fc.Path)
		if !ok {
			continue
		}
		if _, err := ws.write(fc.Path, data); err != nil {
			failed = append(failed, err.Error())
			continue
		}
		out = append(out, FileInfo{Path: fc.Path, Size: fc.Size, SHA256: fc.SHA256})
	}
	if len(failed) > 0 {
		return out, "not saved to the workspace: " + strings.Join(failed, "; ")
	}
	return out, ""
}

// ImageInfo describes an image a run wrote (RunOutput.Images).
type ImageInfo struct {
	Path     string `json:"path"`
	MIMEType string `json:"mime_type"`
	Size     int64  `json:"size"`
	Omitted  string `json:"omitted,omitempty"`
}

// imageContent is the run's images as MCP image content, and their
// descriptions in out.
func imageContent(res *wasmpy.Result, out *RunOutput) []mcp.Content {
	var content []mcp.Content
	for _, im := range res.Images {
		out.Images = append(out.Images, ImageInfo{Path: im.Path, MIMEType: im.MIMEType, Size: im.Size, Omitted: im.Omitted})
		if im.Data != nil {
			content = append(content, &mcp.ImageContent{Data: im.Data, MIMEType: im.MIMEType})
		}
	}
	return content
}

// renderRun is the text rendering of a run, for clients that show text.
func renderRun(o *RunOutput) string {
	var b strings.Builder
	if o.Error != nil {
		fmt.Fprintf(&b, "run failed (error kind: %s)", o.Error.Kind)
		if o.Error.Type != "" {
			fmt.Fprintf(&b, ": %s", o.Error.Type)
		}
		fmt.Fprintf(&b, ": %s\n", o.Error.Message)
	}
	section := func(name, text string, truncated bool) {
		if text == "" {
			return
		}
		fmt.Fprintf(&b, "%s:\n%s", name, text)
		if !strings.HasSuffix(text, "\n") {
			b.WriteByte('\n')
		}
		if truncated {
			fmt.Fprintf(&b, "[%s truncated]\n", name)
		}
	}
	section("stdout", o.Stdout, o.StdoutTruncated)
	section("stderr", o.Stderr, o.StderrTruncated)
	if string(o.Output) != "null" && len(o.Output) > 0 {
		fmt.Fprintf(&b, "output: %s\n", o.Output)
	}
	for _, f := range o.Files {
		fmt.Fprintf(&b, "wrote %s (%d bytes)\n", f.Path, f.Size)
	}
	for _, im := range o.Images {
		if im.Omitted != "" {
			fmt.Fprintf(&b, "image %s not shown: %s\n", im.Path, im.Omitted)
		}
	}
	if o.SaveError != "" {
		fmt.Fprintf(&b, "%s\n", o.SaveError)
	}
	if b.Len() == 0 {
		b.WriteString("(no output)\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// progress streams a run's output to the client as progress notifications,
// whole lines as the run writes them, at most maxChunk bytes each (a longer
// line in pieces; what is left without a newline when the run ends):
// the message is the text, progress the bytes sent so far (both streams),
// and _meta.stream says which stream.
type progress struct {
	ctx   context.Context
	ss    *mcp.ServerSession
	token any
	mu    sync.Mutex
	sent  float64
	bufs  map[string][]byte
}

// maxChunk bounds the text one notification carries.
const maxChunk = 4096

func newProgress(ctx context.Context, ss *mcp.ServerSession, token any) *progress {
	return &progress{ctx: ctx, ss: ss, token: token, bufs: map[string][]byte{}}
}

func (p *progress) stream(name string) *progressStream { return &progressStream{p, name} }

// flush sends what the streams hold, once the run is over.
func (p *progress) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, name := range []string{"stdout", "stderr"} {
		p.send(name, len(p.bufs[name]))
	}
}

// send notifies the first n bytes held for stream name.
func (p *progress) send(name string, n int) {
	if n == 0 {
		return
	}
	buf := p.bufs[name]
	p.sent += float64(n)
	p.ss.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: p.sent,
		Message: string(buf[:n]), Meta: mcp.Meta{"stream": name}})
	p.bufs[name] = append(buf[:0], buf[n:]...)
}

type progressStream struct {
	p    *progress
	name string
}

// Write never fails: a client that stops reading notifications still gets
// the run's result.
func (w *progressStream) Write(b []byte) (int, error) {
	p := w.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bufs[w.name] = append(p.bufs[w.name], b...)
	for {
		buf := p.bufs[w.name]
		n := bytes.LastIndexByte(buf[:min(len(buf), maxChunk)], '\n') + 1
		if n == 0 && len(buf) > maxChunk { // a line longer than a chunk
			n = maxChunk
			for n > 1 && !utf8.RuneStart(buf[n]) { // keep a character whole
				n--
			}
		}
		if n == 0 {
			return len(b), nil
		}
		p.send(w.name, n)
	}
}
