package skills

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/hostfuncs"
	"github.com/wasmpy/wasmpy/internal/jsonschema"
	"github.com/wasmpy/wasmpy/internal/units"
	"github.com/wasmpy/wasmpy/tiers"
)

// The safety flags a skill may declare in skill.yaml.
const (
	FlagNone          = "none"           // pure compute: the skill is granted submit_result only
	FlagPIIRisk       = "pii_risk"       // inputs or outputs may hold personal data (informational)
	FlagExternalCall  = "external_call"  // calls ask_llm or embed; loads only where an LLM endpoint is configured
	FlagSideEffect    = "side_effect"    // acts on the world: every run needs an approval
	FlagFileSystem    = "file_system"    // uses the workspace (read_file, write_file, ...), an in-memory overlay
	FlagNetworkAccess = "network_access" // makes HTTP requests to the hosts of its http block (http_request), under a tier that allows it
)

// SafetyFlags lists every flag, in documentation order.
func SafetyFlags() []string {
	return []string{FlagNone, FlagPIIRisk, FlagExternalCall, FlagSideEffect, FlagFileSystem, FlagNetworkAccess}
}

// Limits bounding a skill's runs, beyond which skill.yaml may not go.
const (
	MaxTimeout = 10 * time.Minute
	MaxMemory  = wasmpy.MaxMemory
)

// Skill is one loaded, validated skill. The registry shares Skills between
// callers: treat every field as read-only.
type Skill struct {
	Name        string
	Version     string // semantic version (semver.org 2.0.0)
	Description string
	// Handler is "module.function": the function named in module.py in the
	// skill's directory.
	Handler          string
	SafetyFlags      []string
	RequiresApproval bool
	Tags             []string
	// Requires are pip-style requirements ("sympy>=1.11") the executor's
	// package sets must meet, or the skill does not load.
	Requires []string
	// Limits bound each run; a zero field means the tier's.
	Limits wasmpy.Limits
	// Tier is the trust tier skill.yaml holds the skill to; "" means the
	// most trusted (a request may ask for a stricter one).
	Tier string
	// HTTP is what http_request may reach, for a skill flagged
	// network_access (skill.yaml's http block); nil otherwise.
	HTTP *hostfuncs.HTTPPolicy

	// Registration is how the skill was registered over the API; nil for
	// one loaded from a directory.
	Registration *Registration

	Dir      string // where the skill was loaded from, for messages
	Source   string // the handler module's source
	CodeHash string // hex SHA-256 of Source

	// InputSchema and OutputSchema are the JSON Schemas from schema.json.
	InputSchema, OutputSchema json.RawMessage

	input, output *jsonschema.Schema
	module, fn    string
}

// NeedsApproval reports whether a run must carry an explicit approval:
// requires_approval is set, or the skill declares side_effect.
func (s *Skill) NeedsApproval() bool {
	return s.RequiresApproval || slices.Contains(s.SafetyFlags, FlagSideEffect)
}

// Grants lists the capabilities a run of the skill is given: submit_result,
// plus ask_llm and embed for external_call and the workspace for file_system.
func (s *Skill) Grants() []wasmpy.Capability {
	g := []wasmpy.Capability{wasmpy.SubmitResult}
	if slices.Contains(s.SafetyFlags, FlagExternalCall) {
		g = append(g, wasmpy.AskLLM, wasmpy.Embed)
	}
	if slices.Contains(s.SafetyFlags, FlagFileSystem) {
		g = append(g, wasmpy.ReadFile, wasmpy.WriteFile, wasmpy.ListFiles, wasmpy.SearchFiles)
	}
	if slices.Contains(s.SafetyFlags, FlagNetworkAccess) {
		g = append(g, wasmpy.HTTPRequest)
	}
	slices.Sort(g)
	return g
}

// Entry is the handler's module (module.py in the skill's directory) and
// the function in it a run calls.
func (s *Skill) Entry() (module, function string) { return s.module, s.fn }

// ValidateInput checks args against the input schema; nil means valid.
func (s *Skill) ValidateInput(args json.RawMessage) ([]Violation, error) {
	return validate(s.input, args)
}

// ValidateOutput checks a handler's return value against the output schema.
func (s *Skill) ValidateOutput(out json.RawMessage) ([]Violation, error) {
	return validate(s.output, out)
}

// Info is the public description of a skill, as GET /skills/{name} and
// `wasmpy skill show` give it (runs.Executor.Describe).
type Info struct {
	Name        string   `json:"name"`
	Version     string   `json:"version"`
	Description string   `json:"description"`
	Handler     string   `json:"handler"`
	SafetyFlags []string `json:"safety_flags"`
	// RequiresApproval is whether a run needs an explicit approval:
	// requires_approval in skill.yaml, or the side_effect flag.
	RequiresApproval bool                `json:"requires_approval"`
	Tags             []string            `json:"tags"`
	Requires         []string            `json:"requires"`
	Limits           LimitsInfo          `json:"limits"` // as runs get them: defaults filled in
	Grants           []wasmpy.Capability `json:"grants"`
	Tier             string              `json:"tier"` // the tier runs get unless a request asks for a stricter one
	CodeHash         string              `json:"code_hash"`
	// Registration is how this version was registered over the API; absent
	// for a skill of the skills directory.
	Registration *Registration `json:"registration,omitempty"`
	// Disabled: this version is registered but does not run until an admin
	// enables it again.
	Disabled bool `json:"disabled,omitempty"`
	// Versions are every registered version of the skill, in the service's
	// answers; absent for a skill of the skills directory.
	Versions []VersionInfo `json:"versions,omitempty"`
}

// VersionInfo is one registered version of a skill, as listed.
type VersionInfo struct {
	Version  string `json:"version"`
	Disabled bool   `json:"disabled"`
	*Registration
}

// LimitsInfo is Limits as JSON.
type LimitsInfo struct {
	TimeoutMS   int64  `json:"timeout_ms"`
	MemoryBytes uint64 `json:"memory_bytes"`
	OutputBytes int    `json:"output_bytes"`
	Fuel        uint64 `json:"fuel"`
}

func limitsInfo(l wasmpy.Limits) LimitsInfo {
	return LimitsInfo{TimeoutMS: l.Timeout.Milliseconds(), MemoryBytes: l.Memory, OutputBytes: l.Output, Fuel: l.Fuel}
}

// Describe is the skill's public description, with the tier and limits
// its runs get (package runs' Executor.Describe says which).
func (s *Skill) Describe(tier *tiers.Tier, limits wasmpy.Limits) Info {
	tags, requires := s.Tags, s.Requires
	if tags == nil {
		tags = []string{}
	}
	if requires == nil {
		requires = []string{}
	}
	return Info{
		Name: s.Name, Version: s.Version, Description: s.Description, Handler: s.Handler,
		SafetyFlags: s.SafetyFlags, RequiresApproval: s.NeedsApproval(),
		Tags: tags, Requires: requires, Limits: limitsInfo(limits), Grants: tier.Grant(s.Grants()), Tier: tier.Name, CodeHash: s.CodeHash,
		Registration: s.Registration,
	}
}

// manifest is skill.yaml as written.
type manifest struct {
	Name             string   `yaml:"name"`
	Version          string   `yaml:"version"`
	Description      string   `yaml:"description"`
	Handler          string   `yaml:"handler"`
	SafetyFlags      []string `yaml:"safety_flags"`
	RequiresApproval bool     `yaml:"requires_approval"`
	Tags             []string `yaml:"tags"`
	Requires         []string `yaml:"requires"`
	Tier             string   `yaml:"tier"`
	Limits           struct {
		Timeout string `yaml:"timeout"` // a Go duration: 500ms, 10s, 1m
		Memory  string `yaml:"memory"`  // bytes, or 64MiB, 1GiB...
		Fuel    uint64 `yaml:"fuel"`
	} `yaml:"limits"`
	// HTTP is what network_access reaches (see httpManifest).
	HTTP *httpManifest `yaml:"http"`
}

// Bounds on skill.yaml's shape, far beyond what a manifest needs.
const (
	maxManifestNodes = 1000
	maxManifestDepth = 8
)

// checkShape refuses what would make decoding skill.yaml slow before the
// strict decoder sees it: yaml.v3 takes time quadratic in a mapping's
// repeated keys to report them (10 KB took 8 s), and aliases can expand a
// small document into a huge one. A manifest needs neither, nor many nodes.
// A document that does not parse is left for the decoder to report.
func checkShape(raw []byte) error {
	var doc yaml.Node
	if yaml.Unmarshal(raw, &doc) != nil {
		return nil
	}
	nodes := 0
	var walk func(n *yaml.Node, depth int) error
	walk = func(n *yaml.Node, depth int) error {
		if nodes++; nodes > maxManifestNodes {
			return fmt.Errorf("more than %d YAML nodes (the limit for a manifest)", maxManifestNodes)
		}
		switch {
		case depth > maxManifestDepth:
			return fmt.Errorf("line %d: nested deeper than %d (the limit for a manifest)", n.Line, maxManifestDepth)
		case n.Kind == yaml.AliasNode:
			return fmt.Errorf("line %d: YAML aliases are not allowed in a manifest", n.Line)
		case n.Kind == yaml.MappingNode:
			seen := map[string]bool{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				if k := n.Content[i]; k.Kind == yaml.ScalarNode {
					if seen[k.Value] {
						return fmt.Errorf("line %d: key %q given twice", k.Line, k.Value)
					}
					seen[k.Value] = true
				}
			}
		}
		for _, c := range n.Content {
			if err := walk(c, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(&doc, 0)
}

var (
	nameRE    = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)
	tagRE     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$`)
	handlerRE = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)$`)
	// semverRE is semver.org's own expression for version 2.0.0.
	semverRE = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
		`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
		`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)
)

// check validates the manifest's fields into s; each problem is one reason.
func (m *manifest) check(s *Skill, opts LoadOptions) []string {
	var bad []string
	fail := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	switch {
	case m.Name == "":
		fail("name: missing")
	case !nameRE.MatchString(m.Name):
		fail("name %q: want lowercase letters, digits, _ or -, starting with a letter, at most 64", m.Name)
	}
	switch {
	case m.Version == "":
		fail("version: missing")
	case !semverRE.MatchString(m.Version):
		fail("version %q: not a semantic version (MAJOR.MINOR.PATCH, e.g. 1.0.0)", m.Version)
	}
	if strings.TrimSpace(m.Description) == "" {
		fail("description: missing")
	}
	switch sub := handlerRE.FindStringSubmatch(m.Handler); {
	case m.Handler == "":
		fail("handler: missing (module.function, e.g. handler.summarize)")
	case sub == nil:
		fail("handler %q: want module.function, e.g. handler.summarize", m.Handler)
	default:
		s.module, s.fn = sub[1], sub[2]
	}
	if len(m.SafetyFlags) == 0 {
		fail("safety_flags: missing (one or more of %s)", strings.Join(SafetyFlags(), ", "))
	}
	seen := map[string]bool{}
	for _, f := range m.SafetyFlags {
		switch {
		case !slices.Contains(SafetyFlags(), f):
			fail("safety_flags: unknown flag %q (want %s)", f, strings.Join(SafetyFlags(), ", "))
		case seen[f]:
			fail("safety_flags: %q listed twice", f)
		case f == FlagExternalCall && !opts.AllowExternalCalls:
			fail("safety_flags: external_call: refused, no LLM endpoint is configured for ask_llm")
		}
		seen[f] = true
	}
	// The executor's package sets are the allowlist (the sandbox installs
	// nothing); without a checker there is nothing to check against.
	for _, r := range m.Requires {
		if opts.Checker != nil {
			if err := opts.Checker.Require(r); err != nil {
				fail("requires: %s", strings.TrimPrefix(err.Error(), "wasmpy: "))
			}
		}
	}
	m.checkHTTP(s, seen[FlagNetworkAccess], fail)
	if seen[FlagNone] && len(m.SafetyFlags) > 1 {
		fail("safety_flags: %q cannot be combined with other flags", FlagNone)
	}
	for _, t := range m.Tags {
		if !tagRE.MatchString(t) {
			fail("tags: bad tag %q (letters, digits, _ . : -, at most 64)", t)
		}
	}
	if t := m.Limits.Timeout; t != "" {
		d, err := time.ParseDuration(t)
		switch {
		case err != nil || d <= 0:
			fail("limits.timeout %q: want a positive duration such as 500ms, 10s or 1m", t)
		case d > MaxTimeout:
			fail("limits.timeout %q: at most %v", t, MaxTimeout)
		}
		s.Limits.Timeout = d
	}
	if mem := m.Limits.Memory; mem != "" {
		n, err := units.ParseSize(mem)
		switch {
		case err != nil || n == 0:
			fail("limits.memory %q: want a positive size such as 64MiB or 1GiB", mem)
		case n > MaxMemory:
			fail("limits.memory %q: at most 4GiB (the wasm32 address space)", mem)
		}
		s.Limits.Memory = n
	}
	if m.Limits.Fuel > wasmpy.MaxFuel {
		fail("limits.fuel %d: at most %d", m.Limits.Fuel, uint64(wasmpy.MaxFuel))
	}
	s.Limits.Fuel = m.Limits.Fuel
	s.Name, s.Version, s.Description, s.Handler = m.Name, m.Version, strings.TrimSpace(m.Description), m.Handler
	s.SafetyFlags, s.RequiresApproval, s.Tags, s.Requires = m.SafetyFlags, m.RequiresApproval, m.Tags, m.Requires
	if m.Tier != "" {
		checkTier(s, m.Tier, opts.tiers(), fail)
		s.Tier = m.Tier
	}
	return bad
}
