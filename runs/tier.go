package runs

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/skills"
	"github.com/wasmpy/wasmpy/tiers"
)

// The tier and the limits a caller's run gets, decided here once for every
// front end: from the Caller (its maximum tier), the tier it asks for, the
// skill's own, and the operator's ceilings.

// CodeTierForbidden refuses a run in a tier more trusted than its caller
// may ask for.
const CodeTierForbidden = "tier_forbidden"

// Tiers are the trust tiers the executor's runs get.
func (e *Executor) Tiers() *tiers.Set {
	if e.cfg.Tiers == nil {
		return tiers.Defaults()
	}
	return e.cfg.Tiers
}

// SkillTier is the tier a run of s gets when c asks for tier asked:
// asked, which may not be more trusted than the skill's own; "" means the
// skill's own (for a skill that names none, the most trusted: its safety
// flags bound its grants), or c's maximum tier when the skill's own is
// above it. The error is a *skills.Error: bad_request, or tier_forbidden for a
// tier above c's maximum.
func (e *Executor) SkillTier(c Caller, s *skills.Skill, asked string) (*tiers.Tier, error) {
	return e.callerTier(c, asked, func(asked string) (*tiers.Tier, error) {
		set := e.Tiers()
		own := s.Tier
		if own == "" {
			own = set.Loosest().Name
		}
		if asked == "" {
			asked = own
		}
		if _, err := set.Lookup(own); err != nil { // a skill loaded with other tiers
			return nil, &skills.Error{Code: CodeBadRequest, Message: fmt.Sprintf("skill %s: tier: %s", s.Name, strings.TrimPrefix(err.Error(), "tiers: "))}
		}
		if err := set.Within(asked, own); err != nil {
			return nil, &skills.Error{Code: CodeBadRequest, Message: "tier: " + strings.TrimPrefix(err.Error(), "tiers: ") +
				fmt.Sprintf(" (skill %s runs in tier %s or a stricter one)", s.Name, own)}
		}
		return set.Lookup(asked)
	})
}

// ExecTier is the tier raw code (Exec, a session) gets when c asks for
// asked; "" means ExecutorConfig.DefaultTier, or c's maximum tier when
// the default is above it. The error is a *skills.Error: bad_request, or
// tier_forbidden for a tier above c's maximum.
func (e *Executor) ExecTier(c Caller, asked string) (*tiers.Tier, error) {
	return e.callerTier(c, asked, e.execTier)
}

func (e *Executor) execTier(asked string) (*tiers.Tier, error) {
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
		return nil, &skills.Error{Code: CodeBadRequest, Message: "tier: " + strings.TrimPrefix(err.Error(), "tiers: ")}
	}
	return t, nil
}

// callerTier is resolve(asked) for c; or, when c asked for none and the
// default is above c's maximum tier, resolve(the maximum). A tier above
// the maximum is refused (tier_forbidden).
func (e *Executor) callerTier(c Caller, asked string, resolve func(string) (*tiers.Tier, error)) (*tiers.Tier, error) {
	t, err := resolve(asked)
	if err != nil {
		return nil, err
	}
	err = e.allowTier(c, t)
	if err != nil && asked == "" && c.MaxTier != "" {
		if capped, cerr := resolve(c.MaxTier); cerr == nil && e.allowTier(c, capped) == nil {
			return capped, nil
		}
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// allowTier refuses t when c may not ask for it: a tier above c's maximum,
// or, when c's maximum is a tier this executor lacks, any but the
// strictest.
func (e *Executor) allowTier(c Caller, t *tiers.Tier) error {
	set := e.Tiers()
	err := set.Within(t.Name, c.MaxTier)
	switch {
	case errors.Is(err, tiers.ErrAboveMax):
		return &skills.Error{Code: CodeTierForbidden, Message: fmt.Sprintf(
			"tier %q is above this token's maximum tier %q: ask for %s or a stricter tier, or use a token allowed more", t.Name, c.MaxTier, c.MaxTier)}
	case err != nil:
		if set.Within(t.Name, set.Strictest().Name) != nil {
			return &skills.Error{Code: CodeTierForbidden, Message: fmt.Sprintf(
				"this token's maximum tier %q is not one of this service's (%s): it may use the strictest only", c.MaxTier, strings.Join(set.Names(), ", "))}
		}
	}
	return nil
}

// ExecLimits are the limits raw code run under t gets when it asks for
// asked: the lower, field by field, of asked, t's limits, the executor's
// ceilings (ExecutorConfig.Sandbox.Limits) and a front end's own
// (ceilings). A request may ask for less, never for more: asking for more
// is a *skills.Error (bad_request) naming the field and its range.
func (e *Executor) ExecLimits(t *tiers.Tier, asked RequestedLimits, ceilings ...wasmpy.Limits) (wasmpy.Limits, error) {
	ceil := t.Limits.Within(e.cfg.Sandbox.Limits)
	for _, c := range ceilings {
		ceil = ceil.Within(c)
	}
	lim, err := asked.limits(ceil, func(field string) string {
		return limitSource(field, t, append([]wasmpy.Limits{e.cfg.Sandbox.Limits}, ceilings...)...)
	})
	if err != nil {
		return wasmpy.Limits{}, err
	}
	return lim.Within(ceil), nil
}

// apply returns job under t, within the executor's ceilings: each limit
// the lowest of the job's, t's and the sandbox's configured ones; harness
// are modules wasmpy's own code in the run imports, allowed whatever t's
// import policy.
func (e *Executor) apply(t *tiers.Tier, job wasmpy.Job, harness ...string) wasmpy.Job {
	job.Limits = job.Limits.Within(e.cfg.Sandbox.Limits)
	policy := *t
	if policy.AllowImports != nil {
		policy.AllowImports = slices.Concat(policy.AllowImports, harness)
	}
	return policy.Apply(job)
}
