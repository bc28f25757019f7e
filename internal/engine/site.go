package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"

	"github.com/tetratelabs/wazero"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"

	"github.com/wasmpy/wasmpy/packages"
)

// siteConfig is the guest's site-packages and what to import from it
// ahead of every run.
type siteConfig struct {
	fs      fs.FS
	key     string
	preload []string
}

var moduleName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

func (s siteConfig) validate() error {
	if s.fs != nil && s.key == "" {
		return errors.New("wasmpy: a site-packages mount needs a key for the snapshot images")
	}
	for _, m := range s.preload {
		if !moduleName.MatchString(m) {
			return &PreloadError{Line: fmt.Sprintf("%s%q: not a module name", preloadFailed, m)}
		}
	}
	return nil
}

// mount adds the site, read-only, to the guest's mounts.
func (s siteConfig) mount(cfg wazero.FSConfig) wazero.FSConfig {
	if s.fs == nil {
		return cfg
	}
	return cfg.(sysfs.FSConfig).WithSysFSMount(s.sysFS(), packages.SiteDir)
}

// sysFS is the site, read-only, for any engine; nil when there is none.
func (s siteConfig) sysFS() experimentalsys.FS {
	if s.fs == nil {
		return nil
	}
	return &readOnlyFS{sysfs.ReadFS{FS: &sysfs.AdaptFS{FS: s.fs}}}
}

// prelude is the Python that puts the site on sys.path and imports the
// preloaded modules; a module that fails to import is reported on one
// stderr line that starts with preloadFailed.
func (s siteConfig) prelude() string {
	var b strings.Builder
	if s.fs != nil {
		fmt.Fprintf(&b, "__import__('sys').path.append(%q)\n", packages.SiteDir)
	}
	if len(s.preload) > 0 {
		fmt.Fprintf(&b, "for _n in %s:\n", pyList(s.preload))
		b.WriteString("    try:\n        __import__(_n)\n")
		b.WriteString("    except BaseException as _e:\n")
		fmt.Fprintf(&b, "        __import__('sys').stderr.write('%s%%s: %%s: %%s\\n' %% (_n, type(_e).__name__, _e))\n", preloadFailed)
		b.WriteString("        raise\n")
		b.WriteString("del _n\n")
	}
	return b.String()
}

const preloadFailed = "wasmpy: preload "

// PreloadError is a module to preload that failed to import: the
// caller's mistake (a name no set provides), not the engine's.
type PreloadError struct{ Line string }

func (e *PreloadError) Error() string { return e.Line }

// preloadError finds the line prelude wrote about a module that failed.
func preloadError(stderr []byte) error {
	i := bytes.Index(stderr, []byte(preloadFailed))
	if i < 0 {
		return nil
	}
	line, _, _ := bytes.Cut(stderr[i:], []byte("\n"))
	return &PreloadError{Line: string(line)}
}

func pyList(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "'" + n + "'" // a module name needs no escaping
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}
