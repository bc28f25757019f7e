package cpythontest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// An expected failure that matched no wasm-only failure fails the run when
// its module ran in it, whichever subset that is; those of modules not run
// (or that could not load) are not judged.
func TestUnfailedExpectedFailures(t *testing.T) {
	expected := parseExpected(t, `
test.test_json.test_x.T.test_a*  # fails
test.test_json.test_x.T.test_b  # fixed since
test.test_asyncio.test_futures.*.test_wrap  # fails
test.test_asyncio.test_futuresX.T.test_c  # another module
test_zlib  # cannot load
test.test_zipfile.T.test_d  # not run
`)
	used := map[string]bool{}
	for _, id := range []string{"test.test_json.test_x.T.test_a1", "test.test_asyncio.test_futures.T.test_wrap"} {
		pat := match(expected, id)
		require.NotEmpty(t, pat, id)
		used[pat] = true
	}
	require.Equal(t, []string{"test.test_asyncio.test_futuresX.T.test_c", "test.test_json.test_x.T.test_b"},
		unfailed(expected, used, []string{"test_json", "test_asyncio.test_futures", "test_asyncio.test_futuresX"}))
	require.Equal(t, []string{"test.test_json.test_x.T.test_b"}, unfailed(expected, used, []string{"test_json"}))
	require.Equal(t, []string{"test_zlib"}, unfailed(expected, used, []string{"test_zlib"}))
	require.Empty(t, unfailed(expected, used, []string{"test_asyncio.test_futures", "test_sys"}))
}

// Every committed pattern names a module `make test-cpython` runs, so that
// a run judges it.
func TestExpectedFailuresNameModules(t *testing.T) {
	for pat := range parseExpected(t, expectedFailures) {
		require.NotEmpty(t, moduleOf(pat, all), "expected_failures.txt: %s names no module of all", pat)
	}
}
