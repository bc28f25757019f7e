// Package codegen turns what people and agents ask for into Python that runs
// in the wasmpy sandbox: a task or a function signature. Package petrinet does
// the same for Petri nets, checking their Python with ValidateEach.
//
// Task and Function ask an LLM (llm.Client, the OpenAI-compatible client
// that ask_llm uses too) for code, take the code out of the reply
// (Extract), check it with Python's own ast module inside the sandbox
// (Validate: syntax, imports outside an allowlist, forbidden builtins, dunder
// tricks, a missing submit_result), run it, and on any failure ask again with
// the error and the failing code, up to Options.Attempts times. LLM transport
// failures (429, 5xx, timeouts) are retried separately, with exponential
// backoff and jitter, never past the context's deadline; Options.Progress
// hears each step and retry. Code that worked is cached on disk, keyed by a
// hash of the task, the server, the model and the templates.
//
// Function also checks the arguments against the signature before asking
// anything (ErrBadArguments), renders the final function from a code
// template (CodeTemplate: typed or simple, a docstring with Args and
// Returns), runs the docstring's doctest examples and, with Options.Tests,
// the model's unittest tests in the sandbox, and grades the function
// (Quality: findings, tests, size, cyclomatic complexity, type hints,
// docstring); failing tests and a missed Options.MinQuality are fed back
// like a failed run.
//
//	sb, _ := wasmpy.New(ctx, wasmpy.Config{})
//	client := llm.New(llm.ConfigFromEnv(os.Getenv))
//	gen, err := codegen.New(sb, client, codegen.Options{CacheDir: dir})
//	rep, err := gen.Task(ctx, "submit the first 10 primes")
//	fmt.Println(rep.Code, string(rep.Result.Output)) // [2,3,5,...]
//
//	fr, err := gen.Function(ctx, "def add(a: int, b: int) -> int:", []any{2, 3}, nil)
//	fmt.Println(string(fr.Value), fr.Quality.Complexity) // 5 1
//
// Validation is fast, useful feedback for the model, not a security
// boundary: the sandbox is. Codegen calls the root wasmpy API like any other
// user; its own validator imports ast, json and sys (HelperImports()), so a
// sandbox with Config.AllowImports must allow them.
package codegen
