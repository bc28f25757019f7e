package packages_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/packages"
)

func TestSatisfy(t *testing.T) {
	dists := []packages.Distribution{{Name: "sympy", Version: "1.13.3"}, {Name: "python-dateutil", Version: "2.9.0"}, {Name: "six", Version: "1.17.0"}}
	for _, tc := range []struct{ req, dist, err string }{
		{"sympy", "sympy", ""},
		{"SymPy>=1.12", "sympy", ""},
		{"sympy>=1.12,<2", "sympy", ""},
		{"sympy==1.13.*", "sympy", ""},
		{"sympy~=1.13.0", "sympy", ""},
		{"sympy~=1.12", "sympy", ""},
		{"python_dateutil[tz] >= 2.8", "python-dateutil", ""},
		{"six===1.17.0", "six", ""},
		{"json", "", ""},
		{"json>=1", "", "no package set provides json"},
		{"sympy>=1.14", "", "the package sets have sympy 1.13.3, which is not >=1.14"},
		{"sympy!=1.13.3", "", "which is not !=1.13.3"},
		{"sympy~=1.12.0", "", "which is not ~=1.12.0"},
		{"sympy==1.12.*", "", "which is not ==1.12.*"},
		{"pandas>=2.0", "", "no package set provides pandas"},
		{"sympy; python_version < '3.14'", "", "is not a requirement wasmpy reads"},
		{"sympy >> 1", "", `cannot read the version clause ">> 1"`},
	} {
		t.Run(tc.req, func(t *testing.T) {
			d, err := packages.Satisfy(tc.req, dists)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			if tc.dist == "" {
				require.Nil(t, d, "the standard library meets it")
				return
			}
			require.Equal(t, tc.dist, d.Name)
		})
	}
}
