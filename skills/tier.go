package skills

import (
	"fmt"
	"slices"
	"strings"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/tiers"
)

func (o LoadOptions) tiers() *tiers.Set {
	if o.Tiers == nil {
		return tiers.Defaults()
	}
	return o.Tiers
}

// checkTier checks skill.yaml's tier: one the set has, that grants what
// the safety flags ask for and holds the skill's own limits.
func checkTier(s *Skill, name string, set *tiers.Set, fail func(string, ...any)) {
	t, err := set.Lookup(name)
	if err != nil {
		fail("tier %q: no such tier (have %s)", name, strings.Join(set.Names(), ", "))
		return
	}
	if c := t.Refused(s.Grants()); c != "" {
		fail("tier %q: does not grant %s, which the safety flags ask for", name, c)
	}
	l := t.Limits
	if s.Limits.Timeout > l.Timeout {
		fail("limits.timeout %v: above tier %s's %v", s.Limits.Timeout, name, l.Timeout)
	}
	if s.Limits.Memory > l.Memory {
		fail("limits.memory %d: above tier %s's %d bytes", s.Limits.Memory, name, l.Memory)
	}
	if l.Fuel > 0 && s.Limits.Fuel > l.Fuel {
		fail("limits.fuel %d: above tier %s's %d", s.Limits.Fuel, name, l.Fuel)
	}
}

// Tiers are the trust tiers the executor's runs get.
func (e *Executor) Tiers() *tiers.Set {
	if e.cfg.Tiers == nil {
		return tiers.Defaults()
	}
	return e.cfg.Tiers
}

// SkillTier is the tier a run of s gets when a request asks for tier
// asked: asked, which may not be more trusted than the skill's own; ""
// means the skill's own, and for a skill that names none, the most
// trusted (its safety flags bound its grants). The error is an *Error
// (bad_request).
func (e *Executor) SkillTier(s *Skill, asked string) (*tiers.Tier, error) {
	set := e.Tiers()
	own := s.Tier
	if own == "" {
		own = set.Loosest().Name
	}
	if asked == "" {
		asked = own
	}
	if _, err := set.Lookup(own); err != nil { // a skill loaded with other tiers
		return nil, &Error{Code: CodeBadRequest, Message: fmt.Sprintf("skill %s: tier: %s", s.Name, strings.TrimPrefix(err.Error(), "tiers: "))}
	}
	if err := set.Within(asked, own); err != nil {
		return nil, &Error{Code: CodeBadRequest, Message: "tier: " + strings.TrimPrefix(err.Error(), "tiers: ") +
			fmt.Sprintf(" (skill %s runs in tier %s or a stricter one)", s.Name, own)}
	}
	return set.Lookup(asked)
}

// ExecTier is the tier raw code (Exec, a session) gets when a request
// asks for asked; "" means ExecutorConfig.DefaultTier. The error is an
// *Error (bad_request).
func (e *Executor) ExecTier(asked string) (*tiers.Tier, error) {
	set := e.Tiers()
	if asked == "" {
		asked = e.cfg.DefaultTier
	}
	if asked == "" {
		if t, err := set.Lookup(tiers.Testing); err == nil {
			return t, nil
		}
		return set.Strictest(), nil
	}
	t, err := set.Lookup(asked)
	if err != nil {
		return nil, &Error{Code: CodeBadRequest, Message: "tier: " + strings.TrimPrefix(err.Error(), "tiers: ")}
	}
	return t, nil
}

// apply returns job under t, within the executor's ceilings: its limits
// are its own where set, else t's where the sandbox's configured limits
// are not lower; harness are modules wasmpy's own code in the run imports,
// allowed whatever t's import policy.
func (e *Executor) apply(t *tiers.Tier, job wasmpy.Job, harness ...string) wasmpy.Job {
	job.Limits = job.Limits.Or(t.LimitsWithin(e.cfg.Sandbox.Limits))
	policy := *t
	if policy.AllowImports != nil {
		policy.AllowImports = slices.Concat(policy.AllowImports, harness)
	}
	return policy.Apply(job)
}
