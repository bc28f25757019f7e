package wasmpy

import (
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

// Packages lists the package sets the sandbox mounts, in the order given.
func (s *Sandbox) Packages() []PackageSet { return slices.Clone(s.sets) }

// mountPackages opens and checks every set and merges them into the
// guest's site-packages; nothing is mounted unless all pass.
func mountPackages(paths []string) (fs.FS, []PackageSet, error) {
	if len(paths) == 0 {
		return nil, []PackageSet{}, nil
	}
	var sets []*packages.Set
	var info []PackageSet
	for _, p := range paths {
		s, err := packages.Open(p)
		if err != nil {
			return nil, nil, err
		}
		sets = append(sets, s)
		ps := PackageSet{Name: s.Name(), SHA256: s.SHA256, Distributions: []string{}}
		for _, d := range s.Manifest.Distributions {
			ps.Distributions = append(ps.Distributions, d.Name+" "+d.Version)
		}
		info = append(info, ps)
	}
	site, err := packages.Mount(sets...)
	if err != nil {
		return nil, nil, err
	}
	return site, info, nil
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
