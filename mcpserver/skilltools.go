package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmpy/wasmpy/internal/jsontext"
	"github.com/wasmpy/wasmpy/runs"
	"github.com/wasmpy/wasmpy/skills"
)

// ApprovedMeta is the _meta key of a tools/call that approves a skill
// needing approval (requires_approval, side_effect). It is set by the
// client, after asking its user, never by the model: the arguments cannot
// carry it.
const ApprovedMeta = "wasmpy/approved"

// builtinTools are the tools no skill may shadow.
var builtinTools = []string{"run_python", "write_file", "read_file", "list_files", "session_create", "session_fork", "session_close"}

// addSkills makes each loaded skill a tool; those still loading join when
// the registry is done, and clients are told the list changed.
func (s *Server) addSkills(ctx context.Context, reg *skills.Registry) {
	add := func() {
		for _, sk := range reg.Skills() {
			if slices.Contains(builtinTools, sk.Name) {
				s.log.Warn("a skill has a built-in tool's name; not served over MCP", "skill", sk.Name)
				continue
			}
			s.addSkill(sk)
		}
	}
	add()
	if len(reg.Pending()) > 0 {
		go func() {
			if reg.Wait(ctx) == nil {
				add()
			}
		}()
	}
}

func (s *Server) addSkill(sk *skills.Skill) {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(sk.Description))
	fmt.Fprintf(&b, "\n\nSkill %s %s: a vetted Python handler that runs in the wasmpy sandbox (no network; "+
		"every call a fresh instance, recorded with its provenance). Arguments and result follow its schemas.", sk.Name, sk.Version)
	if len(sk.SafetyFlags) > 0 {
		fmt.Fprintf(&b, " Safety flags: %s.", strings.Join(sk.SafetyFlags, ", "))
	}
	if sk.NeedsApproval() {
		fmt.Fprintf(&b, " It needs the user's approval: the client sets _meta[%q] = true on the call.", ApprovedMeta)
	}
	ann := &mcp.ToolAnnotations{Title: sk.Name, OpenWorldHint: new(bool)}
	if sk.NeedsApproval() {
		t := true
		ann.DestructiveHint = &t
	}
	tool := &mcp.Tool{Name: sk.Name, Description: b.String(), InputSchema: sk.InputSchema, Annotations: ann}
	if objectSchema(sk.OutputSchema) { // MCP's structured content is an object
		tool.OutputSchema = sk.OutputSchema
	}
	s.mcp.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return s.callSkill(ctx, req, sk, tool.OutputSchema != nil)
	})
}

func (s *Server) callSkill(ctx context.Context, req *mcp.CallToolRequest, sk *skills.Skill, structuredOut bool) (*mcp.CallToolResult, error) {
	args := objectArgs(req.Params.Arguments)
	if err := jsontext.Check(args, jsontext.Limits{Depth: maxArgsDepth}); err != nil {
		return s.fail(invalidParams("%s: arguments: %v", sk.Name, err))
	}
	approved, _ := req.Params.Meta[ApprovedMeta].(bool)
	c, err := s.conn(req.Session)
	if err != nil {
		return s.fail(err)
	}
	sreq := runs.Request{Args: args, ActorID: actor(req.Session), ActorType: "mcp", Approved: approved, Caller: c.caller}
	tier, err := s.cfg.Executor.SkillTier(c.caller, sk, "") // the skill's own, within the caller's maximum
	if err != nil {
		return s.fail(err)
	}
	sreq.Tier = tier.Name
	if _, err := runs.Check(sk, sreq); err != nil {
		return s.fail(err)
	}
	x, err := s.adm.Run(ctx, 0, func(ctx context.Context) (*runs.Execution, error) { return s.cfg.Executor.Execute(ctx, sk, sreq) })
	if err != nil {
		return s.fail(err)
	}
	if e := x.Error; e != nil {
		text := fmt.Sprintf("skill %s failed (%s", sk.Name, e.Code)
		if e.Kind != "" {
			text += ", error kind: " + string(e.Kind)
		}
		text += "): " + e.Message + "\nexecution_id: " + x.Record.ExecutionID
		if x.Result != nil && x.Result.Stderr != "" {
			text += "\nstderr:\n" + x.Result.Stderr
		}
		return toolError(text, nil), nil
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(x.Result.Output)}},
		Meta: mcp.Meta{"execution_id": x.Record.ExecutionID}}
	if structuredOut {
		res.StructuredContent = x.Result.Output
	}
	return res, nil
}

// objectSchema reports whether a schema says its value is an object.
func objectSchema(schema json.RawMessage) bool {
	var top struct {
		Type any `json:"type"`
	}
	return json.Unmarshal(schema, &top) == nil && top.Type == "object"
}
