package tiers

// Strictness is how much validation asks of generated code (codegen) beyond
// its syntax and its shape (a submit_result call, the def asked for). A tier
// chooses one; codegen.Options.Validation takes it.
type Strictness string

// The strictnesses, strictest first.
const (
	// Strict checks imports against the allowed modules, refuses the
	// forbidden builtins and the dunder tricks.
	Strict Strictness = "strict"
	// Standard refuses the forbidden builtins only: any import, dunders
	// allowed.
	Standard Strictness = "standard"
	// Syntax checks the syntax and the shape only.
	Syntax Strictness = "syntax"
)

// Strictnesses lists them, strictest first.
func Strictnesses() []Strictness { return []Strictness{Strict, Standard, Syntax} }

// PureComputeImports are the modules of the pure-compute standard library:
// what generated code may import by default (codegen.DefaultAllowImports),
// and the core of the sandbox tier's list (SandboxImports).
func PureComputeImports() []string {
	return []string{
		"math", "cmath", "json", "re", "collections", "itertools", "functools", "operator",
		"datetime", "decimal", "fractions", "statistics", "string", "random", "hashlib",
		"heapq", "bisect", "textwrap", "unicodedata", "dataclasses", "enum", "typing",
		"copy", "pprint", "base64", "binascii", "difflib", "csv",
	}
}
