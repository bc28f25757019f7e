package numpytest

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/wasmpy/wasmpy"
)

//go:embed driver.py
var driver string

// limits are each test file's: numpy's largest file (test_multiarray) needs
// about 1 GiB and minutes on a loaded machine; unmetered, so the tests see
// the real clock (a metered run's is fixed, and pytest's durations and
// hypothesis's deadlines would read nonsense).
var limits = wasmpy.Limits{Memory: 3 << 30, Timeout: time.Hour, Output: 64 << 20}

// counts are pytest's, as the driver prints them.
type counts struct {
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Error   int `json:"error"`
	Skipped int `json:"skipped"`
	XFailed int `json:"xfailed"`
	XPassed int `json:"xpassed"`
}

func (c counts) String() string {
	return fmt.Sprintf("%d passed, %d failed, %d errors, %d skipped, %d xfailed, %d xpassed",
		c.Passed, c.Failed, c.Error, c.Skipped, c.XFailed, c.XPassed)
}

func (c *counts) add(o counts) {
	c.Passed += o.Passed
	c.Failed += o.Failed
	c.Error += o.Error
	c.Skipped += o.Skipped
	c.XFailed += o.XFailed
	c.XPassed += o.XPassed
}

// outcome is the driver's last line: the counts, each failure and error as
// [FAILED|ERROR, test id, one-line reason], and the skips by reason.
type outcome struct {
	counts
	Problems [][3]string    `json:"problems"`
	Skips    map[string]int `json:"skips"`
}

// suite is one package's own test suite as the sandbox runs it.
type suite struct {
	pkg       string            // the top package ("numpy"), a directory of its source tree
	env       string            // the variable that selects test files ("WASMPY_NUMPY_TESTS")
	list      string            // the expected failures' file, for messages
	dirs      []string          // the test directories `all` selects; nil: every one under pkg/tests
	notRun    map[string]string // the files a directory's run leaves out, each with why
	args      []string          // pytest's arguments before the test file
	recursive bool              // a directory is also its subdirectories' test files
}

// testFiles expands a selection of test files and directories (relative to
// tree) into the files to run, one run each, so a trap or a limit in one
// file costs only that file and every problem is named by its file. A
// directory gives its test_*.py files (and its subdirectories', for a
// recursive suite) less those in s.notRun, which are returned with their
// reasons; a file named on its own always runs.
func (s suite) testFiles(tree string, sel []string) ([]string, map[string]string, error) {
	var files []string
	left := map[string]string{}
	seen := map[string]bool{}
	add := func(f string) {
		if !seen[f] { // a directory and its parent both selected
			seen[f] = true
			files = append(files, f)
		}
	}
	for _, name := range sel {
		name = path.Clean(strings.TrimSpace(name))
		st, err := os.Stat(filepath.Join(tree, name))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %s is not in %s's source tree", s.env, name, s.pkg)
		}
		if !st.IsDir() {
			add(name)
			continue
		}
		found, _ := filepath.Glob(filepath.Join(tree, name, "test_*.py"))
		if s.recursive {
			found = nil
			filepath.WalkDir(filepath.Join(tree, name), func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "test_") && strings.HasSuffix(d.Name(), ".py") {
					found = append(found, p)
				}
				return nil
			})
		}
		if len(found) == 0 {
			return nil, nil, fmt.Errorf("%s: %s has no test_*.py files", s.env, name)
		}
		sort.Strings(found)
		for _, f := range found {
			rel, err := filepath.Rel(tree, f)
			if err != nil {
				return nil, nil, err
			}
			rel = filepath.ToSlash(rel)
			if why, ok := s.notRun[rel]; ok {
				left[rel] = why
				continue
			}
			add(rel)
		}
	}
	return files, left, nil
}

// runFile runs pytest on one test file in a fresh run of sb, with tree as
// the workspace; an error says why the run ended without the driver's
// summary (a trap, a limit, a crash).
func (s suite) runFile(ctx context.Context, sb *wasmpy.Sandbox, tree, file string) (outcome, error) {
	var o outcome
	args := append(append([]string{s.pkg}, s.args...), file)
	res, err := sb.Run(ctx, wasmpy.Job{Code: driver, Filename: "driver.py", Args: args, Workspace: tree, Limits: limits})
	if err != nil {
		return o, err
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if json.Unmarshal([]byte(lines[len(lines)-1]), &o) == nil && o.Skips != nil {
		return o, nil
	}
	why := "no summary"
	if res.Error != nil {
		why = string(res.Error.Kind) + ": " + res.Error.Message
	}
	return o, fmt.Errorf("%s\nstdout: %s\nstderr: %s", why, tail(res.Stdout, 2000), tail(res.Stderr, 2000))
}

// fileReport is one file's line and its problems, each with its reason.
func fileReport(file string, o outcome, err error, took time.Duration) string {
	took = took.Round(time.Second)
	if err != nil {
		return fmt.Sprintf("%-55s did not finish after %s: %v", file, took, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-55s %s (%s)", file, o.counts, took)
	for _, p := range o.Problems {
		fmt.Fprintf(&b, "\n    %s %s: %s", p[0], p[1], p[2])
	}
	return b.String()
}

// tally sums the files' outcomes per directory and groups their problems by
// reason.
type tally struct {
	name    string // the package whose tests they are
	groups  []string
	byGroup map[string]*counts
	files   map[string]int
	reasons map[string]map[string]int // reason -> file -> problems
	skips   map[string]int
	crashed []string
}

func (t *tally) add(file string, o outcome, err error) {
	if t.byGroup == nil {
		t.byGroup, t.files, t.reasons, t.skips = map[string]*counts{}, map[string]int{}, map[string]map[string]int{}, map[string]int{}
	}
	if err != nil {
		t.crashed = append(t.crashed, file)
		return
	}
	g := path.Dir(file)
	if t.byGroup[g] == nil {
		t.byGroup[g] = &counts{}
		t.groups = append(t.groups, g)
	}
	t.byGroup[g].add(o.counts)
	t.files[g]++
	for _, p := range o.Problems {
		why := p[0] + " " + p[2]
		if t.reasons[why] == nil {
			t.reasons[why] = map[string]int{}
		}
		t.reasons[why][path.Base(file)]++
	}
	for why, k := range o.Skips {
		t.skips[why] += k
	}
}

func (t *tally) total() counts {
	var c counts
	for _, g := range t.byGroup {
		c.add(*g)
	}
	return c
}

// String is the summary: per directory, the total, the problems by reason
// (most frequent first), the most frequent reasons to skip, the files left
// out and those that did not finish.
func (t *tally) String(left map[string]string) string {
	var b strings.Builder
	owner := t.name + "'s"
	if strings.HasSuffix(t.name, "s") {
		owner = t.name + "'" // pandas'
	}
	fmt.Fprintf(&b, "%s tests in the sandbox, per directory:\n", owner)
	for _, g := range t.groups {
		fmt.Fprintf(&b, "  %-28s %4d files  %s\n", g, t.files[g], t.byGroup[g])
	}
	fmt.Fprintf(&b, "  %-28s %4d files  %s\n", "total", sumFiles(t.files), t.total())
	n := map[string]int{}
	for r, fs := range t.reasons {
		for _, k := range fs {
			n[r] += k
		}
	}
	reasons := byCount(n)
	if len(reasons) > 0 {
		fmt.Fprintf(&b, "failures and errors by reason:\n")
	}
	for _, r := range reasons {
		var where []string
		for f, k := range t.reasons[r] {
			where = append(where, fmt.Sprintf("%s %d", f, k))
		}
		sort.Strings(where)
		fmt.Fprintf(&b, "  %5d  %s  (%s)\n", n[r], r, strings.Join(where, ", "))
	}
	skips := byCount(t.skips)
	if len(skips) > 20 {
		skips = skips[:20]
	}
	if len(skips) > 0 {
		fmt.Fprintf(&b, "skipped, the most frequent reasons:\n")
	}
	for _, r := range skips {
		fmt.Fprintf(&b, "  %5d  %s\n", t.skips[r], r)
	}
	files := make([]string, 0, len(left))
	for f := range left {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		fmt.Fprintf(&b, "not run: %s: %s\n", f, left[f])
	}
	if len(t.crashed) > 0 {
		fmt.Fprintf(&b, "did not finish: %s\n", strings.Join(t.crashed, ", "))
	}
	return b.String()
}

// byCount is m's keys, the largest count first.
func byCount(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}

func sumFiles(m map[string]int) int {
	n := 0
	for _, k := range m {
		n += k
	}
	return n
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
