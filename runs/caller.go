package runs

import "context"

// Caller is who asks for a run, as its front end authenticated it. Every
// front end (the HTTP service, MCP over HTTP or stdio, the CLI's serve)
// hands it to the Executor, which resolves tiers and limits from it in
// one place (ExecTier, SkillTier, ExecLimits): none can grant more than
// another.
type Caller struct {
	// Owner is the caller's identity (a token's): the sessions it opens
	// are its own, and so are the records of its runs. "" on a service
	// that asks for no token.
	Owner string
	// MaxTier is the most trusted tier the caller may ask for; "" for no
	// maximum.
	MaxTier string
	// Admin callers read every record, not only their own.
	Admin bool
	// Scope, when set, narrows the caller's sessions to those opened with
	// the same scope (an MCP session's: no other MCP session of the same
	// token can name them); budgets still count them as Owner's.
	Scope string
}

type callerKey struct{}

// WithCaller returns ctx carrying c, for a front end to hand the caller it
// authenticated to another behind it (the HTTP service to MCP at /mcp).
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom is the Caller WithCaller put in ctx; the zero Caller (no
// token, no maximum tier) when there is none, as on a service that asks
// for no token.
func CallerFrom(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// sessionOwner is who a session c opens belongs to.
func (c Caller) sessionOwner() string {
	if c.Scope == "" {
		return c.Owner
	}
	return c.Owner + "/" + c.Scope
}
