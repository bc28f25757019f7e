package numpytest

import (
	"bufio"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// expectedLine is one entry of expected_failures.txt: a test id, then
// whitespace, "# " and the reason.
var expectedLine = regexp.MustCompile(`^(.*?\S)\s+#\s*(.*)$`)

// parseExpected reads a list of expected failures (list is its file name,
// for messages; expected_failures.txt is numpy's): test ids (pytest's, as the
// report names them: FILE::CLASS::TEST[PARAMS], or FILE for a module that
// cannot be collected), each with the one-line reason it fails in the
// sandbox. Blank lines and lines starting with # are comments.
func parseExpected(list, text string) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := expectedLine.FindStringSubmatch(line)
		if m == nil || strings.TrimSpace(m[2]) == "" {
			return nil, fmt.Errorf("%s:%d: %q gives no reason (ID  # REASON)", list, n, line)
		}
		id := m[1]
		if file, _, _ := strings.Cut(id, "::"); !strings.HasSuffix(file, ".py") {
			return nil, fmt.Errorf("%s:%d: %q is not a test id (FILE.py::TEST)", list, n, id)
		}
		if _, dup := out[id]; dup {
			return nil, fmt.Errorf("%s:%d: %s is listed twice", list, n, id)
		}
		out[id] = strings.TrimSpace(m[2])
	}
	return out, sc.Err()
}

// judge compares the files that ran to pytest's summary with the expected
// failures: a failure or error not listed is unexpected; a listed test of
// one of those files that did not fail (it passed, was skipped, or is gone)
// is stale. Listed tests of files not run, or that did not finish, are not
// judged.
func judge(expected map[string]string, finished map[string]outcome) (unexpected [][3]string, stale []string) {
	failed := map[string]bool{}
	for _, o := range finished {
		for _, p := range o.Problems {
			failed[p[1]] = true
			if _, ok := expected[p[1]]; !ok {
				unexpected = append(unexpected, p)
			}
		}
	}
	for id := range expected {
		file, _, _ := strings.Cut(id, "::")
		if _, ran := finished[file]; ran && !failed[id] {
			stale = append(stale, id)
		}
	}
	sort.Slice(unexpected, func(i, j int) bool { return unexpected[i][1] < unexpected[j][1] })
	sort.Strings(stale)
	return unexpected, stale
}

// verdict says what judge found, each unexpected failure as a line the
// list of expected failures could take.
func verdict(list string, unexpected [][3]string, stale []string) string {
	var b strings.Builder
	if len(unexpected) > 0 {
		fmt.Fprintf(&b, "%d failures and errors not in %s (fix them, or list them with a reason):\n", len(unexpected), list)
	}
	for _, p := range unexpected {
		fmt.Fprintf(&b, "  %s  # %s %s\n", p[1], p[0], p[2])
	}
	if len(stale) > 0 {
		fmt.Fprintf(&b, "%d expected failures that did not fail (remove them from %s):\n", len(stale), list)
	}
	for _, id := range stale {
		fmt.Fprintf(&b, "  %s\n", id)
	}
	if b.Len() == 0 {
		b.WriteString("every failure is expected, and every expected failure of the files run failed\n")
	}
	return b.String()
}

// inSuite says whether a test id's file is one that `all` runs.
func (s suite) inSuite(id string) bool {
	file, _, _ := strings.Cut(id, "::")
	if _, left := s.notRun[file]; left {
		return false
	}
	if s.dirs == nil {
		return strings.HasPrefix(file, s.pkg+"/tests/") && strings.HasPrefix(path.Base(file), "test_")
	}
	for _, d := range s.dirs {
		if path.Dir(file) == d {
			return true
		}
	}
	return false
}

// The committed list parses, and names only tests of the files `all` runs,
// so that each entry is judged by a full run.
func TestExpectedFailuresList(t *testing.T) {
	for _, s := range []struct {
		suite
		text, make string
	}{{numpySuite, expectedFailures, "make test-numpy"}, {pandasSuite, pandasExpectedFailures, "make test-pandas"}} {
		expected, err := parseExpected(s.list, s.text)
		require.NoError(t, err)
		for id := range expected {
			require.True(t, s.inSuite(id), "%s: %s is not a test of a file `%s` runs", s.list, id, s.make)
		}
	}
	for text, want := range map[string]string{
		"a/test_x.py::test_y\n":                        `expected_failures.txt:1: "a/test_x.py::test_y" gives no reason (ID  # REASON)`,
		"# c\n\na/test_x.py::test_y  #  \n":            `expected_failures.txt:3: "a/test_x.py::test_y  #" gives no reason (ID  # REASON)`,
		"test_y  # why\n":                              `expected_failures.txt:1: "test_y" is not a test id (FILE.py::TEST)`,
		"a/test_x.py::t  # why\na/test_x.py::t  # 2\n": "expected_failures.txt:2: a/test_x.py::t is listed twice",
	} {
		_, err := parseExpected("expected_failures.txt", text)
		require.EqualError(t, err, want)
	}
	got, err := parseExpected("expected_failures.txt", "# reason\na/test_x.py::T::t[a b]  # why # it fails\na/test_z.py # cannot import\n")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a/test_x.py::T::t[a b]": "why # it fails", "a/test_z.py": "cannot import"}, got)
	require.True(t, numpySuite.inSuite("numpy/lib/tests/test_io.py::TestSaveTxt::test_x"))
	require.False(t, numpySuite.inSuite("numpy/_core/tests/test_memmap.py::test_x"))
	require.False(t, numpySuite.inSuite("pkg/tests/test_x.py::test_y"))
	require.False(t, numpySuite.inSuite("numpy/lib/tests/data/test_x.py::test_y"))
	require.True(t, pandasSuite.inSuite("pandas/tests/frame/methods/test_sort_values.py::TestX::test_y[a]"))
	require.False(t, pandasSuite.inSuite("pandas/tests/frame/common.py::test_y"))
	require.False(t, pandasSuite.inSuite("numpy/lib/tests/test_io.py::test_y"))
}
