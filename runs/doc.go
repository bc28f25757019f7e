// Package runs is the run service every front end shares: it runs code
// and skills for a caller and records each run. The HTTP service
// (package service), MCP (package mcpserver) and the CLI (cmd/wasmpy)
// hand it who is calling (a Caller); it decides the run's tier and
// limits from that, once, for all of them, runs the job in its one
// sandbox, and keeps the provenance record.
//
// Where each part is:
//
//	executor.go   Executor: the one sandbox every run shares, its store, Describe, Lookup
//	caller.go     Caller: who asks for a run, as its front end authenticated it
//	tier.go       the tier and limits a caller's run gets (SkillTier, ExecTier, ExecLimits)
//	limits.go     RequestedLimits, the limits a request asks for, checked against the tier's
//	exec.go       Execute (a skill), Exec (raw code), Check; the run and its record
//	record.go     NewRecord, CompleteRecord: the provenance of one run (`wasmpy exec --record` too)
//	sessions.go   sessions: a caller's Python state across turns, kept in a SessionStore
//	budget.go     what sessions may hold, in all and per caller
//	admission.go  Admission: the run slots, queue and request timeout of a server
//	def.go        Def: a function the LLM writes, run and recorded
//	json.go       an Execution as JSON, the one shape of a skill run's answer
//	actor.go      the bounds on who a request says it comes from
//
// The skills it runs come from package skills (the registry: loading,
// checking and registering skills), which knows nothing of runs; a
// refusal is a *skills.Error with a stable code (this package's Code
// constants, and the registry's).
//
//	ex, err := runs.NewExecutor(ctx, runs.ExecutorConfig{Store: st})
//	reg, err := skills.LoadDir(ctx, "skills", skills.LoadOptions{Checker: ex.Checker()})
//	s, _ := reg.Get("text_summarize")
//	x, err := ex.Execute(ctx, s, runs.Request{Args: json.RawMessage(`{"text": "..."}`)})
//	// x.Result.Output is the output, x.Record the provenance, x.Error why it failed
//
// The package is named for what it holds, runs: not "executor" (the
// Executor is one of its types, beside admission, sessions and
// records), nor "service" (that is the HTTP API over it).
package runs
