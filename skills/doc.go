// Package skills serves named, versioned, schema-checked pieces of Python
// ("skills") that always run in the wasmpy sandbox, and records the
// provenance of every execution.
//
// A skill is a directory:
//
//	text_summarize/
//	  skill.yaml   # name, version, description, handler, safety_flags, requires_approval, tags, requires, limits
//	  schema.json  # {"input": <JSON Schema>, "output": <JSON Schema>}
//	  handler.py   # def summarize(text, max_sentences=5, style="concise") -> dict
//
// Load a directory of them, then execute one:
//
//	ex, err := skills.NewExecutor(ctx, skills.ExecutorConfig{Store: st})
//	reg, err := skills.LoadDir(ctx, "skills", skills.LoadOptions{Checker: ex.Checker()})
//	for _, p := range reg.Problems() { log.Print(p) } // broken skills, each with its path and reason
//	s, _ := reg.Get("text_summarize")
//	x, err := ex.Execute(ctx, s, skills.Request{Args: json.RawMessage(`{"text": "..."}`)})
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
// The records are provenance.Records, kept by a provenance.Store (SQLite or
// PostgreSQL: package provenance/stores opens either); package
// skills/service is the HTTP API over an Executor and a Registry.
package skills
