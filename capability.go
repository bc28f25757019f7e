package wasmpy

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/wasmpy/wasmpy/hostfuncs"
	"github.com/wasmpy/wasmpy/internal/pyname"
)

// Capability names a host function a run may call: one of the built-ins
// below, or a name in Config.HostFuncs. A run gets only the capabilities it
// is granted (Config.Grants and Job.Grants); nothing is granted by default,
// so a capability added to wasmpy later reaches no run that did not ask.
type Capability string

// The built-in capabilities.
const (
	ReadFile     Capability = "read_file"     // a workspace file
	WriteFile    Capability = "write_file"    // a file in the run's overlay
	ListFiles    Capability = "list_files"    // workspace paths matching a glob
	SearchFiles  Capability = "search_files"  // lines matching a regex in workspace files
	AskLLM       Capability = "ask_llm"       // one chat completion from Config.LLM
	Embed        Capability = "embed"         // embeddings of texts from Config.LLM's /embeddings, in ask_llm's budget
	SubmitResult Capability = "submit_result" // one JSON value back as Result.Output
	// HTTPRequest makes HTTP requests to the hosts of the run's HTTPPolicy
	// (Config.HTTP, Job.HTTP), the guest's urllib.request and requests
	// included. It is not among Builtins: nothing that grants "every
	// built-in" reaches the network; it is granted by name.
	HTTPRequest Capability = "http_request"
)

// Builtins returns every built-in capability, for callers that mean to grant
// them all (the CLI does).
func Builtins() []Capability {
	return []Capability{ReadFile, WriteFile, ListFiles, SearchFiles, AskLLM, Embed, SubmitResult}
}

// checkGrants refuses a grant of a name that is neither built in nor in
// Config.HostFuncs; what names a typo is better than a guest's NameError.
func (cfg *Config) checkGrants(what string, grants []Capability) error {
	for _, g := range grants {
		if _, ok := cfg.HostFuncs[string(g)]; ok || slices.Contains(Builtins(), g) || g == HTTPRequest {
			continue
		}
		known := make([]string, 0, len(cfg.HostFuncs)+8)
		for _, b := range append(Builtins(), HTTPRequest) {
			known = append(known, string(b))
		}
		known = append(known, slices.Sorted(maps.Keys(cfg.HostFuncs))...)
		return fmt.Errorf("wasmpy: %s: no capability %q (have %s)", what, g, strings.Join(known, ", "))
	}
	return nil
}

// checkHostFuncs refuses embedder functions the guest could not call by
// their name: it installs each as a Python builtin, and names starting with
// "_" are the transport's own.
func checkHostFuncs(t hostfuncs.Table) error {
	for name, fn := range t {
		if !pyname.IsIdentifier(name) || strings.HasPrefix(name, "_") {
			return fmt.Errorf("wasmpy: HostFuncs: %q is not a Python identifier without a leading underscore", name)
		}
		if fn == nil {
			return fmt.Errorf("wasmpy: HostFuncs: %q has a nil function", name)
		}
	}
	return nil
}
