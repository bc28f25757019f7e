package wasmpy

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/wasmpy/wasmpy/packages"
)

// PackageSet identifies a package set a sandbox mounts, for results and
// provenance.
type PackageSet struct {
	Name          string   `json:"name"`          // the set's file name
	SHA256        string   `json:"sha256"`        // of the set's file
	Distributions []string `json:"distributions"` // "name version", sorted
}

// andList joins "a", "b", "c" as "a, b and c".
func andList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// Packages lists the package sets the sandbox mounts, in the order given.
func (s *Sandbox) Packages() []PackageSet { return slices.Clone(s.sets) }

// Require checks pip-style requirements ("sympy>=1.12") against the
// distributions of the mounted package sets and those the interpreter
// carries (numpy and pandas in the sci build), which are the allowlist: the error
// names the first requirement none meets, and why.
func (s *Sandbox) Require(reqs ...string) error {
	for _, r := range reqs {
		if _, err := packages.Satisfy(r, s.dists); err != nil {
			if len(s.sets) == 0 {
				has := []string{"the standard library"}
				for _, d := range s.interp.Packages {
					has = append(has, d.Name+" "+d.Version)
				}
				return fmt.Errorf("wasmpy: requirement %q: the sandbox mounts no package set, so it has only %s", strings.TrimSpace(r), andList(has))
			}
			return fmt.Errorf("wasmpy: requirement %q: %v", strings.TrimSpace(r), err)
		}
	}
	return nil
}

// mountPackages opens and checks every set and merges them into the
// guest's site-packages; nothing is mounted unless all pass.
func mountPackages(paths []string) (fs.FS, []PackageSet, []packages.Distribution, error) {
	if len(paths) == 0 {
		return nil, []PackageSet{}, nil, nil
	}
	var dists []packages.Distribution
	var sets []*packages.Set
	var info []PackageSet
	for _, p := range paths {
		s, err := packages.Open(p)
		if err != nil {
			return nil, nil, nil, err
		}
		sets = append(sets, s)
		dists = append(dists, s.Manifest.Distributions...)
		ps := PackageSet{Name: s.Name(), SHA256: s.SHA256, Distributions: []string{}}
		for _, d := range s.Manifest.Distributions {
			ps.Distributions = append(ps.Distributions, d.Name+" "+d.Version)
		}
		info = append(info, ps)
	}
	site, err := packages.Mount(sets...)
	if err != nil {
		return nil, nil, nil, err
	}
	return site, info, dists, nil
}

// setsKey identifies the mounted sets' contents, in order.
func setsKey(sets []PackageSet) string {
	if len(sets) == 0 {
		return ""
	}
	sums := make([]string, len(sets))
	for i, s := range sets {
		sums[i] = s.SHA256
	}
	return strings.Join(sums, ",")
}
