package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type writeArgs struct {
	Path     string `json:"path"`
	Content  string `json:"content"`
	Encoding string `json:"encoding"`
}

type readArgs struct {
	Path string `json:"path"`
}

type listArgs struct {
	Dir string `json:"dir"`
}

// ReadOutput is read_file's structured content.
type ReadOutput struct {
	Path     string `json:"path"`
	Size     int    `json:"size"`
	Encoding string `json:"encoding"` // utf-8, or base64 for bytes that are not UTF-8
	Content  string `json:"content"`
}

var fileInfoSchema = `{"type": "object", "properties": {"path": {"type": "string"}, "size": {"type": "integer"}, "sha256": {"type": "string"}}, "required": ["path", "size"]}`

func (s *Server) addFileTools() {
	ro, idem := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(bool)},
		&mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(bool), OpenWorldHint: new(bool)}
	s.mcp.AddTool(&mcp.Tool{
		Name:  "write_file",
		Title: "Write a workspace file",
		Description: "Write a file into this session's sandbox workspace, for run_python to read (open('data.csv'), " +
			"pathlib, csv, json...): the working directory of every run is the workspace. Replaces a file of the " +
			"same path. content is UTF-8 text, or base64 with encoding \"base64\" for binary data.",
		InputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "A relative path, such as data/input.csv."},
    "content": {"type": "string"},
    "encoding": {"enum": ["utf-8", "base64"], "default": "utf-8"}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`),
		OutputSchema: json.RawMessage(fileInfoSchema),
		Annotations:  idem,
	}, s.writeFile)
	s.mcp.AddTool(&mcp.Tool{
		Name:  "read_file",
		Title: "Read a workspace file",
		Description: "Read a file from this session's sandbox workspace: one given to run_python or write_file, or one " +
			"that a run wrote. Text comes back as UTF-8; other bytes as base64 (encoding says which).",
		InputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {"path": {"type": "string", "description": "A relative path, as list_files gives it."}},
  "required": ["path"],
  "additionalProperties": false
}`),
		OutputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {"path": {"type": "string"}, "size": {"type": "integer"}, "encoding": {"enum": ["utf-8", "base64"]}, "content": {"type": "string"}},
  "required": ["path", "size", "encoding", "content"]
}`),
		Annotations: ro,
	}, s.readFile)
	s.mcp.AddTool(&mcp.Tool{
		Name:        "list_files",
		Title:       "List workspace files",
		Description: "List the files in this session's sandbox workspace (all of them, or those under dir), with their sizes.",
		InputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {"dir": {"type": "string", "description": "Only files under this relative directory."}},
  "additionalProperties": false
}`),
		OutputSchema: json.RawMessage(`{"type": "object", "properties": {"files": {"type": "array", "items": ` + fileInfoSchema + `}}, "required": ["files"]}`),
		Annotations:  ro,
	}, s.listFiles)
}

func (s *Server) writeFile(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a writeArgs
	if err := decodeArgs("write_file", req.Params.Arguments, &a); err != nil {
		return s.fail(err)
	}
	data := []byte(a.Content)
	switch a.Encoding {
	case "", "utf-8":
	case "base64":
		var err error
		if data, err = base64.StdEncoding.DecodeString(a.Content); err != nil {
			return s.fail(invalidParams("write_file: content is not base64: %v", err))
		}
	default:
		return s.fail(invalidParams(`write_file: argument "encoding": want "utf-8" or "base64", got %q`, a.Encoding))
	}
	ws, err := s.files(req.Session)
	if err != nil {
		return s.fail(err)
	}
	fi, err := ws.write(a.Path, data)
	if err != nil {
		return toolError("write_file: "+err.Error(), nil), nil
	}
	return structured(fmt.Sprintf("wrote %s (%d bytes)", fi.Path, fi.Size), fi), nil
}

func (s *Server) readFile(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a readArgs
	if err := decodeArgs("read_file", req.Params.Arguments, &a); err != nil {
		return s.fail(err)
	}
	ws, err := s.files(req.Session)
	if err != nil {
		return s.fail(err)
	}
	p, data, err := ws.read(a.Path)
	if err != nil {
		return toolError("read_file: "+err.Error(), nil), nil
	}
	out := ReadOutput{Path: p, Size: len(data), Encoding: "utf-8", Content: string(data)}
	if !utf8.Valid(data) {
		out.Encoding, out.Content = "base64", base64.StdEncoding.EncodeToString(data)
	}
	text := out.Content
	if out.Encoding == "base64" {
		text = fmt.Sprintf("%s: %d bytes of binary data, base64:\n%s", p, len(data), out.Content)
	}
	return structured(text, out), nil
}

func (s *Server) listFiles(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a listArgs
	if err := decodeArgs("list_files", req.Params.Arguments, &a); err != nil {
		return s.fail(err)
	}
	ws, err := s.files(req.Session)
	if err != nil {
		return s.fail(err)
	}
	list, err := ws.list(a.Dir)
	if err != nil {
		return toolError("list_files: "+err.Error(), nil), nil
	}
	var b strings.Builder
	for _, f := range list {
		fmt.Fprintf(&b, "%s\t%d bytes\n", f.Path, f.Size)
	}
	if len(list) == 0 {
		b.WriteString("(the workspace is empty)")
	}
	return structured(strings.TrimSuffix(b.String(), "\n"), map[string]any{"files": list}), nil
}

// structured is a successful tool result: text for the model, and the
// same as structured content.
func structured(text string, v any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: v}
}
