// Package needs lets a test say what it needs from the machine: a build
// work dir, fetched packages. Where `make test` runs (WASMPY_STRICT=1) or
// CI (CI=true), the project's own setup provides all of it, so a missing
// one fails the test; elsewhere (a plain `go test` on a machine without
// them) it skips. A test never skips on the symptom it guards: only on a
// missing input.
package needs

import (
	"os"
	"testing"
)

// Strict reports whether missing inputs fail tests instead of skipping them.
func Strict() bool {
	return os.Getenv("WASMPY_STRICT") == "1" || os.Getenv("CI") == "true"
}

// Skipf skips t, or fails it where the setup must have provided what is missing.
func Skipf(t testing.TB, format string, args ...any) {
	t.Helper()
	if Strict() {
		t.Fatalf("missing (the project's setup provides it under make test and CI): "+format, args...)
	}
	t.Skipf(format, args...)
}
