package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type sessionArgs struct {
	SessionID string `json:"session_id"`
}

var sessionIDSchema = json.RawMessage(`{
  "type": "object",
  "properties": {"session_id": {"type": "string", "description": "A session_id from session_create or session_fork."}},
  "required": ["session_id"],
  "additionalProperties": false
}`)

var sessionInfoSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "session_id": {"type": "string"},
    "turns": {"type": "integer"},
    "state_hash": {"type": "string"},
    "state_bytes": {"type": "integer"},
    "max_state_bytes": {"type": "integer"},
    "saved_bytes": {"type": "integer"},
    "expires_at": {"type": "string"}
  },
  "required": ["session_id", "turns"]
}`)

func (s *Server) addSessionTools() {
	noWorld := new(bool)
	s.mcp.AddTool(&mcp.Tool{
		Name:  "session_create",
		Title: "Start a Python session",
		Description: "Start a Python session: run_python calls that pass its session_id share their Python state " +
			"(variables, imports, functions, classes, and the files they write), as cells of a notebook do. Each call " +
			"still runs in a fresh sandbox instance, started from the state the previous call left. A call that raises " +
			"keeps what it did before raising, as a notebook cell does; one the sandbox stopped (timeout, memory, fuel, " +
			"output limit) leaves the session as it was before that call. Sessions close when this " +
			"MCP session ends, or after 30 idle minutes.",
		InputSchema:  json.RawMessage(`{"type": "object", "properties": {}, "additionalProperties": false}`),
		OutputSchema: sessionInfoSchema,
		Annotations:  &mcp.ToolAnnotations{OpenWorldHint: noWorld, DestructiveHint: noWorld},
	}, s.sessionCreate)
	s.mcp.AddTool(&mcp.Tool{
		Name:  "session_fork",
		Title: "Fork a Python session",
		Description: "Copy a session: the new session starts from the state the given one has now, and from then " +
			"on the two are independent (try something in the fork, keep the original).",
		InputSchema:  sessionIDSchema,
		OutputSchema: sessionInfoSchema,
		Annotations:  &mcp.ToolAnnotations{OpenWorldHint: noWorld, DestructiveHint: noWorld},
	}, s.sessionFork)
	s.mcp.AddTool(&mcp.Tool{
		Name:         "session_close",
		Title:        "Close a Python session",
		Description:  "Close a session and discard its state.",
		InputSchema:  sessionIDSchema,
		OutputSchema: json.RawMessage(`{"type": "object", "properties": {"session_id": {"type": "string"}, "closed": {"type": "boolean"}}, "required": ["session_id", "closed"]}`),
		Annotations:  &mcp.ToolAnnotations{OpenWorldHint: noWorld, IdempotentHint: true},
	}, s.sessionClose)
}

func (s *Server) sessionCreate(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a struct{}
	if err := decodeArgs("session_create", req.Params.Arguments, &a); err != nil {
		return s.fail(err)
	}
	c, err := s.conn(req.Session)
	if err != nil {
		return s.fail(err)
	}
	info, err := s.cfg.Executor.NewSession(ctx, c.caller, "")
	if err != nil {
		return s.fail(err)
	}
	s.opened(c, info.ID)
	return structured(fmt.Sprintf("session %s started; pass it as session_id to run_python", info.ID), info), nil
}

func (s *Server) sessionFork(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a sessionArgs
	if err := decodeArgs("session_fork", req.Params.Arguments, &a); err != nil {
		return s.fail(err)
	}
	c, err := s.conn(req.Session)
	if err != nil {
		return s.fail(err)
	}
	info, err := s.cfg.Executor.ForkSession(ctx, a.SessionID, c.caller)
	if err != nil {
		return s.fail(err)
	}
	s.opened(c, info.ID)
	return structured(fmt.Sprintf("session %s forked from %s at turn %d", info.ID, a.SessionID, info.Turns), info), nil
}

func (s *Server) sessionClose(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a sessionArgs
	if err := decodeArgs("session_close", req.Params.Arguments, &a); err != nil {
		return s.fail(err)
	}
	c, err := s.conn(req.Session)
	if err != nil {
		return s.fail(err)
	}
	if err := s.cfg.Executor.CloseSession(ctx, a.SessionID, c.caller); err != nil {
		return s.fail(err)
	}
	c.mu.Lock()
	delete(c.sessions, a.SessionID)
	c.mu.Unlock()
	return structured("session "+a.SessionID+" closed", map[string]any{"session_id": a.SessionID, "closed": true}), nil
}

// opened remembers a sandbox session of c's, to close with it.
func (s *Server) opened(c *conn, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sessions == nil { // the MCP session ended meanwhile
		s.cfg.Executor.CloseSession(context.Background(), id, c.caller)
		return
	}
	c.sessions[id] = true
}
