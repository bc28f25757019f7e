//go:build !linux

package assets

import (
	"os"
	"time"
)

// identity is unknown here: every load hashes the interpreter.
func identity(*os.File) string { return "" }

func changed(*os.File) time.Time { return time.Time{} }
