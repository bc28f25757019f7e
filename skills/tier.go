package skills

import (
	"strings"

	"github.com/wasmpy/wasmpy/tiers"
)

func (o LoadOptions) tiers() *tiers.Set {
	if o.Tiers == nil {
		return tiers.Defaults()
	}
	return o.Tiers
}

// checkTier checks skill.yaml's tier: one the set has, that grants what
// the safety flags ask for and holds the skill's own limits (a skill's
// runs get the lower of its limits and its tier's, so one above would not
// get what it declares).
func checkTier(s *Skill, name string, set *tiers.Set, fail func(string, ...any)) {
	t, err := set.Lookup(name)
	if err != nil {
		fail("tier %q: no such tier (have %s)", name, strings.Join(set.Names(), ", "))
		return
	}
	if c := t.Refused(s.Grants()); c != "" {
		fail("tier %q: does not grant %s, which the safety flags ask for", name, c)
	}
	got, l := s.Limits.Within(t.Limits), t.Limits
	if s.Limits.Timeout != 0 && got.Timeout != s.Limits.Timeout {
		fail("limits.timeout %v: above tier %s's %v", s.Limits.Timeout, name, l.Timeout)
	}
	if s.Limits.Memory != 0 && got.Memory != s.Limits.Memory {
		fail("limits.memory %d: above tier %s's %d bytes", s.Limits.Memory, name, l.Memory)
	}
	if s.Limits.Fuel != 0 && got.Fuel != s.Limits.Fuel {
		fail("limits.fuel %d: above tier %s's %d", s.Limits.Fuel, name, l.Fuel)
	}
}
