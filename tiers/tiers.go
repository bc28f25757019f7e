// Package tiers defines trust tiers: named policy profiles that bundle
// what a run may do. A tier sets the run's limits (time, fuel, memory,
// output), the capabilities it may be granted, the modules its code may
// import, and how strictly generated code is validated. Three are built
// in, least trusted first: sandbox (the default for generated code),
// testing and trusted; a YAML file can define others (Parse, Load).
//
//	set := tiers.Defaults()
//	t, err := set.Lookup("sandbox")
//	job = t.Apply(job) // limits, grants and imports within the tier; job.Tier = "sandbox"
//	res, err := sb.Run(ctx, job)
//
// A tier is a policy for the run, not a boundary of its own: the sandbox
// is the boundary, and the tier chooses how much of it to open.
package tiers

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wasmpy/wasmpy"
)

// The built-in tiers, least trusted first.
const (
	Sandbox = "sandbox"
	Testing = "testing"
	Trusted = "trusted"
)

// Tier is one policy profile.
type Tier struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Limits are the run's limits; Fuel 0 means unmetered, Output 0
	// wasmpy's default (see wasmpy.Limits); Timeout and Memory are always
	// set.
	Limits wasmpy.Limits `json:"-"`
	// Capabilities are the most a run may be granted: what a job asks
	// beyond them is not granted.
	Capabilities []wasmpy.Capability `json:"capabilities"`
	// AllowImports are the only top-level modules the code may import;
	// nil means any.
	AllowImports []string `json:"allow_imports"`
	// Validation is how strictly generated code is checked before it runs.
	Validation Strictness `json:"validation"`
}

// SandboxImports are the modules code in the sandbox tier may import: the
// pure-compute standard library.
func SandboxImports() []string {
	return slices.Concat(PureComputeImports(), []string{
		"abc", "array", "contextlib", "io", "numbers", "struct", "sys", "time", "types", "uuid", "zlib",
	})
}

// Defaults returns the built-in tiers.
func Defaults() *Set {
	const mib = 1 << 20
	return &Set{tiers: []*Tier{
		{Name: Sandbox, Description: "untrusted and generated code: pure compute, metered, the pure-compute standard library",
			Limits:       wasmpy.Limits{Timeout: 10 * time.Second, Memory: 64 * mib, Output: 1 * mib, Fuel: 1_000_000_000},
			Capabilities: []wasmpy.Capability{wasmpy.SubmitResult},
			AllowImports: SandboxImports(), Validation: Strict},
		{Name: Testing, Description: "code under test: the workspace (an overlay) too, any module, no external calls",
			Limits: wasmpy.Limits{Timeout: 20 * time.Second, Memory: wasmpy.DefaultLimits().Memory},
			Capabilities: []wasmpy.Capability{wasmpy.SubmitResult, wasmpy.ReadFile, wasmpy.WriteFile,
				wasmpy.ListFiles, wasmpy.SearchFiles},
			Validation: Standard},
		{Name: Trusted, Description: "code its runner vouches for: every built-in, wasmpy's default limits, unmetered",
			// Output 0: wasmpy's default, none for a stream (exec's output), else 4 MiB.
			Limits:       wasmpy.Limits{Timeout: wasmpy.DefaultLimits().Timeout, Memory: wasmpy.DefaultLimits().Memory},
			Capabilities: wasmpy.Builtins(), Validation: Syntax},
	}}
}

// Set is an ordered set of tiers, least trusted first. It is read-only
// once made.
type Set struct {
	tiers []*Tier
}

// ErrUnknown is wrapped by Lookup's error for a name the set lacks.
var ErrUnknown = errors.New("tiers: no such tier")

// ErrAboveMax is wrapped by Within's error for a tier more trusted than a
// caller may ask for.
var ErrAboveMax = errors.New("tiers: above the maximum tier")

// Names lists the tiers' names, least trusted first.
func (s *Set) Names() []string {
	out := make([]string, len(s.tiers))
	for i, t := range s.tiers {
		out[i] = t.Name
	}
	return out
}

// Tiers lists copies of the tiers, least trusted first.
func (s *Set) Tiers() []Tier {
	out := make([]Tier, len(s.tiers))
	for i, t := range s.tiers {
		out[i] = *t
	}
	return out
}

// Lookup returns the tier called name; the error wraps ErrUnknown and
// names the tiers there are.
func (s *Set) Lookup(name string) (*Tier, error) {
	for _, t := range s.tiers {
		if t.Name == name {
			return t, nil
		}
	}
	return nil, fmt.Errorf("%w %q (have %s)", ErrUnknown, name, strings.Join(s.Names(), ", "))
}

// Strictest is the least trusted tier: the default for generated code and
// for requests that name none.
func (s *Set) Strictest() *Tier { return s.tiers[0] }

// Loosest is the most trusted tier: the default where the code's own
// author runs it (the CLI's exec) and for skills that declare none.
func (s *Set) Loosest() *Tier { return s.tiers[len(s.tiers)-1] }

// Within reports whether tier name is at most max in trust; max "" means
// no maximum. The error wraps ErrUnknown or ErrAboveMax.
func (s *Set) Within(name, max string) error {
	t, err := s.Lookup(name)
	if err != nil || max == "" {
		return err
	}
	m, err := s.Lookup(max)
	if err != nil {
		return fmt.Errorf("tiers: the maximum: %w", err)
	}
	if s.rank(t) > s.rank(m) {
		return fmt.Errorf("%w: tier %q is more trusted than %q, the most this caller may ask for", ErrAboveMax, name, max)
	}
	return nil
}

func (s *Set) rank(t *Tier) int { return slices.Index(s.tiers, t) }

// Apply returns job under t: its limits are within t's, the lower of the
// two field by field (wasmpy.Limits.Within: a job may ask for less than
// its tier, never more); its grants are those of job.Grants that t allows;
// its imports are t's (within job.AllowImports, when set); job.Tier is t's
// name.
func (t *Tier) Apply(job wasmpy.Job) wasmpy.Job {
	job.Limits = job.Limits.Within(t.Limits)
	job.Grants = t.Grant(job.Grants)
	switch {
	case t.AllowImports == nil:
	case job.AllowImports == nil:
		job.AllowImports = slices.Clone(t.AllowImports)
	default:
		job.AllowImports = slices.DeleteFunc(slices.Clone(job.AllowImports), func(m string) bool { return !slices.Contains(t.AllowImports, m) })
	}
	job.Tier = t.Name
	return job
}

// Grant returns the capabilities of asked that t allows.
func (t *Tier) Grant(asked []wasmpy.Capability) []wasmpy.Capability {
	out := []wasmpy.Capability{}
	for _, c := range asked {
		if slices.Contains(t.Capabilities, c) {
			out = append(out, c)
		}
	}
	return out
}

// Refused returns the first capability of asked that t does not allow, or
// "" when it allows them all: for a caller that asked for them by name and
// should hear why one is missing.
func (t *Tier) Refused(asked []wasmpy.Capability) wasmpy.Capability {
	for _, c := range asked {
		if !slices.Contains(t.Capabilities, c) {
			return c
		}
	}
	return ""
}
