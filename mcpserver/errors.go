package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmpy/wasmpy/internal/jsontext"
	"github.com/wasmpy/wasmpy/runs"
	"github.com/wasmpy/wasmpy/skills"
)

// maxArgsDepth bounds the nesting of a tool's arguments, as the HTTP
// service bounds its bodies.
const maxArgsDepth = 512

// invalidParams is the protocol error for arguments a tool cannot take.
func invalidParams(format string, a ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, a...)}
}

// decodeArgs reads a tool's arguments into v strictly: a JSON object (or
// nothing), valid UTF-8 without unpaired surrogates, only the fields v has,
// each of its type. Anything else is a protocol error naming the problem.
func decodeArgs(tool string, raw json.RawMessage, v any) error {
	raw = objectArgs(raw)
	if err := jsontext.Check(raw, jsontext.Limits{Depth: maxArgsDepth}); err != nil {
		return invalidParams("%s: arguments: %v", tool, err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te) && te.Field != "":
			return invalidParams("%s: argument %q: want %s, got %s", tool, te.Field, jsonType(te.Type.Kind().String()), te.Value)
		case errors.As(err, &te):
			return invalidParams("%s: arguments: want an object, got %s", tool, te.Value)
		}
		return invalidParams("%s: arguments: %s", tool, strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// objectArgs is the arguments as sent, or {} when there are none.
func objectArgs(raw json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return json.RawMessage("{}")
	}
	return raw
}

// jsonType names a Go kind as JSON calls it.
func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer in range"
	}
	return "a number"
}

// fail is the one adapter from the execution core's errors to MCP's
// answers: arguments the core refuses (bad_request, invalid_input) are a
// protocol error (invalid params, with the error as data); a request turned
// away (busy, timeout, canceled, approval_required) is a tool error naming
// its code, so the model can see it and retry or ask, as is a session
// that does not exist (or is another client's); anything else is the
// host's own failure, logged, and an internal error without its cause.
func (s *Server) fail(err error) (*mcp.CallToolResult, error) {
	var je *jsonrpc.Error
	var se *skills.Error
	switch {
	case errors.As(err, &je):
		return nil, je
	case errors.As(err, &se) && (se.Code == runs.CodeBadRequest || se.Code == runs.CodeInvalidInput):
		data, _ := json.Marshal(se)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: se.Message, Data: data}
	case errors.Is(err, runs.ErrNoSession):
		return toolError("unknown_session: no such session in this MCP session (session_create starts one)", nil), nil
	case errors.Is(err, runs.ErrSessionConflict):
		return toolError("session_conflict: "+err.Error(), nil), nil
	case errors.As(err, &se) && se.Code == runs.CodeApprovalRequired:
		return toolError(fmt.Sprintf("%s: %s: the user must approve this call (the client sets _meta[%q] = true)", se.Code, se.Message, ApprovedMeta), nil), nil
	case errors.As(err, &se):
		return toolError(fmt.Sprintf("%s: %s", se.Code, se.Message), nil), nil
	}
	s.log.Error("internal error", "err", err.Error())
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
}

// toolError is a tool result with isError set: text for the model, and the
// structured content when the tool's output schema allows it.
func toolError(text string, structured any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: structured}
}
