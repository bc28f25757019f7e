package packages

import (
	"path"
	"strings"
)

// checkPath refuses a path that could land outside the set's directory or
// mean different things to different readers: absolute, with "..", "." or
// empty segments, backslashes or NUL.
func checkPath(p string) string {
	switch {
	case p == "":
		return "an empty path"
	case strings.HasPrefix(p, "/"):
		return "an absolute path"
	case strings.ContainsAny(p, "\\\x00"):
		return "a backslash or NUL in the path"
	}
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "..":
			return "a path that climbs out with \"..\""
		case "", ".":
			return "a path with an empty or \".\" segment"
		}
	}
	return ""
}

// nativeSuffixes are the file names the guest cannot load, and that a set
// refuses rather than ship dead: CPython's extension modules on every
// platform, and shared libraries they bring along.
var nativeSuffixes = []string{".so", ".pyd", ".dll", ".dylib"}

// isNative reports whether name is native code (mod.cpython-313-x86_64-linux-gnu.so,
// mod.abi3.so, libfoo.so.1, mod.pyd).
func isNative(name string) bool {
	base := path.Base(name)
	if strings.Contains(base, ".so.") {
		return true
	}
	for _, s := range nativeSuffixes {
		if strings.HasSuffix(base, s) {
			return true
		}
	}
	return false
}

// metadataDir reports whether a top-level name is a distribution's
// metadata (name-version.dist-info or .egg-info), which holds no module.
func metadataDir(top string) bool {
	return strings.HasSuffix(top, ".dist-info") || strings.HasSuffix(top, ".egg-info")
}

// topModule is the import name a path provides at the top level, or ""
// when it provides none (metadata, a data file beside the packages).
func topModule(p string) string {
	top, rest, isDir := strings.Cut(p, "/")
	switch {
	case metadataDir(top) || strings.HasSuffix(top, ".data"):
		return ""
	case isDir:
		if strings.HasPrefix(rest, "__pycache__/") || top == "__pycache__" {
			return ""
		}
		return top
	case strings.HasSuffix(top, ".py"):
		return strings.TrimSuffix(top, ".py")
	}
	return ""
}

// checkFile applies the rules every file of a set obeys; it returns the
// reason to refuse it, or "".
func checkFile(p string) string {
	if why := checkPath(p); why != "" {
		return why
	}
	if isNative(p) {
		return "native extension module: the sandbox runs pure Python only"
	}
	if m := topModule(p); m != "" && Reserved(m) {
		return "shadows the module " + m + " that the guest has already (standard library or wasmpy's own)"
	}
	return ""
}
