// Package skills is the registry of named, versioned, schema-checked
// pieces of Python ("skills"): loading them from directories, checking
// them (manifest, schemas, handler, tier), and registering versions into
// a store. Package runs runs them, in the wasmpy sandbox, and records the
// provenance of every execution; this package knows nothing of runs.
//
// A skill is a directory:
//
//	text_summarize/
//	  skill.yaml   # name, version, description, handler, safety_flags, requires_approval, tags, requires, limits
//	  schema.json  # {"input": <JSON Schema>, "output": <JSON Schema>}
//	  handler.py   # def summarize(text, max_sentences=5, style="concise") -> dict
//
// Load a directory of them (the checker is the sandbox runs use), then
// execute one:
//
//	ex, err := runs.NewExecutor(ctx, runs.ExecutorConfig{Store: st})
//	reg, err := skills.LoadDir(ctx, "skills", skills.LoadOptions{Checker: ex.Checker()})
//	for _, p := range reg.Problems() { log.Print(p) } // broken skills, each with its path and reason
//	s, _ := reg.Get("text_summarize")
//	x, err := ex.Execute(ctx, s, runs.Request{Args: json.RawMessage(`{"text": "..."}`)})
//	// x.Result.Output is the output, x.Record the provenance, x.Error why it failed
//
// A server calls skills.StartDir instead, which returns at once: each skill
// appears in the registry as soon as it passes its checks.
//
// Skills can also be registered from their files (Registry.Register) into
// a store (LoadOptions.Registered), each version once, checked as a
// directory's skill is; versions are disabled, enabled and deleted there,
// every change on the store's audit trail, and every replica over the store
// serves them (Registry.Sync, Registry.Runnable).
//
// Refusals are *Error, with a stable code (versions.go's, and package
// runs' for runs). The records of runs are provenance.Records, kept by a
// provenance.Store (SQLite or PostgreSQL: package provenance/stores opens
// either); package service is the HTTP API over a runs.Executor and a
// Registry.
package skills
