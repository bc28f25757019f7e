//go:build !unix

package resident

import "os"

// pollRead reads f: there is no resident here to serve a run (Listen
// fails), and this only keeps the package building.
func pollRead(f, _ *os.File, p []byte) (int, error) { return f.Read(p) }
