package packages

import (
	"archive/zip"
	"bytes"
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
)

// SiteDir is where the guest finds the sets' files: the site-packages of
// an installed CPython 3.13, so __file__, tracebacks and inspect see the
// paths a native install has.
const SiteDir = "/usr/local/lib/python3.13/site-packages"

// ManifestName is the set's manifest, at its top level (not importable).
const ManifestName = "wasmpy-packages.json"

// Format identifies this layout of a set.
const Format = "wasmpy-packages/1"

// Manifest says what a set holds and where it came from.
type Manifest struct {
	Format string `json:"format"`
	// Python is the bytecode's cache tag (cpython-313): an interpreter with
	// another tag ignores the bytecode and compiles the sources.
	Python        string         `json:"python"`
	Inputs        []Info         `json:"inputs"`
	Distributions []Distribution `json:"distributions"`
	Modules       []string       `json:"modules"` // the top-level import names
	// Uncompiled are modules whose source the interpreter refused (kept,
	// without bytecode: importing one raises its SyntaxError).
	Uncompiled map[string]string `json:"uncompiled,omitempty"`
}

// Distribution is one distribution a set holds.
type Distribution struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Input   string `json:"input"` // the Info.Name it came from
}

// BuildOptions say what to build a set from.
type BuildOptions struct {
	Inputs []string // wheels and directories
	// Python runs code in the sandbox whose interpreter will import the
	// set, with stdin, and returns its stdout: the bytecode is made there.
	Python func(ctx context.Context, code string, stdin []byte) ([]byte, error)
}

//go:embed compile.py
var compileSource string

// epoch is every entry's date, the first a zip can hold; dosEpoch is its
// MS-DOS form (day 1, month 1, year 1980+0).
var epoch = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

const dosEpoch = 1<<5 | 1

// Build assembles a set: it reads and checks every input, compiles the
// modules in the sandbox and returns the set's bytes, which depend on
// the inputs' contents and base names only.
func Build(ctx context.Context, opts BuildOptions) ([]byte, *Manifest, error) {
	if len(opts.Inputs) == 0 {
		return nil, nil, errors.New("wasmpy: a package set needs at least one wheel or directory")
	}
	m := &Manifest{Format: Format, Uncompiled: map[string]string{}}
	files := map[string][]byte{}
	from := map[string]string{}
	for _, p := range opts.Inputs {
		in, err := readInput(p)
		if err != nil {
			return nil, nil, err
		}
		for name, data := range in.files {
			if other, dup := from[name]; dup {
				return nil, nil, errorf(p, "%s is also in %s", name, other)
			}
			files[name], from[name] = data, p
		}
		ds, err := in.distributions()
		if err != nil {
			return nil, nil, err
		}
		m.Inputs = append(m.Inputs, in.Info)
		m.Distributions = append(m.Distributions, ds...)
	}
	slices.SortFunc(m.Distributions, func(a, b Distribution) int { return strings.Compare(a.Name, b.Name) })
	m.Modules = modules(files)

	var sources []string
	for name := range files {
		if strings.HasSuffix(name, ".py") {
			sources = append(sources, name)
		}
	}
	slices.Sort(sources)
	pycs, tag, err := compileAll(ctx, opts.Python, files, sources, m.Uncompiled)
	if err != nil {
		return nil, nil, err
	}
	m.Python = tag
	for name, pyc := range pycs {
		files[cachePath(name, tag)] = pyc
	}
	if len(m.Uncompiled) == 0 {
		m.Uncompiled = nil
	}
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	files[ManifestName] = append(manifest, '\n')
	set, err := writeZip(files)
	return set, m, err
}

// modules lists the top-level import names among files.
func modules(files map[string][]byte) []string {
	var mods []string
	for name := range files {
		if m := topModule(name); m != "" && !slices.Contains(mods, m) {
			mods = append(mods, m)
		}
	}
	slices.Sort(mods)
	return mods
}

// cachePath is where importlib looks for a module's bytecode.
func cachePath(src, tag string) string {
	dir, file := path.Split(src)
	return dir + "__pycache__/" + strings.TrimSuffix(file, ".py") + "." + tag + ".pyc"
}

// batchBytes bounds the source sent to one compiling run.
const batchBytes = 4 << 20

// compileAll compiles sources in batches, two at a time (each batch is a
// run of its own), and notes the ones the interpreter refuses.
func compileAll(ctx context.Context, python func(context.Context, string, []byte) ([]byte, error),
	files map[string][]byte, sources []string, refused map[string]string) (map[string][]byte, string, error) {
	var batches [][]string
	size := 0
	for _, name := range sources {
		if len(batches) == 0 || size+len(files[name]) > batchBytes {
			batches, size = append(batches, nil), 0
		}
		batches[len(batches)-1] = append(batches[len(batches)-1], name)
		size += len(files[name])
	}
	type result struct {
		Tag    string            `json:"tag"`
		Pyc    map[string][]byte `json:"pyc"`
		Errors map[string]string `json:"errors"`
	}
	results := make([]result, len(batches))
	errs := make([]error, len(batches))
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for i, batch := range batches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			job := struct {
				Prefix string      `json:"prefix"`
				Files  [][2]string `json:"files"`
			}{Prefix: SiteDir}
			for _, name := range batch {
				job.Files = append(job.Files, [2]string{name, base64.StdEncoding.EncodeToString(files[name])})
			}
			stdin, _ := json.Marshal(job)
			out, err := python(ctx, compileSource, stdin)
			if err != nil {
				errs[i] = fmt.Errorf("wasmpy: compiling the set's modules: %w", err)
				return
			}
			if err := json.Unmarshal(out, &results[i]); err != nil {
				errs[i] = fmt.Errorf("wasmpy: compiling the set's modules: unreadable answer: %v", err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, "", err
	}
	pycs := map[string][]byte{}
	tag := ""
	for _, r := range results {
		if tag != "" && r.Tag != tag || r.Tag == "" || strings.ContainsAny(r.Tag, "/.") {
			return nil, "", fmt.Errorf("wasmpy: compiling the set's modules: bad cache tag %q", r.Tag)
		}
		tag = r.Tag
		for name, pyc := range r.Pyc {
			pycs[name] = pyc
		}
		for name, why := range r.Errors {
			refused[name] = why
		}
	}
	for _, name := range sources {
		if _, ok := pycs[name]; !ok && refused[name] == "" {
			return nil, "", fmt.Errorf("wasmpy: compiling the set's modules: no bytecode for %s", name)
		}
	}
	return pycs, tag, nil
}

// writeZip writes files sorted, stored (uncompressed), with one date and
// mode: nothing of the machine, the clock or the compressor shows.
func writeZip(files map[string][]byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range sortedKeys(files) {
		data := files[name]
		h := &zip.FileHeader{Name: name, Method: zip.Store, ModifiedDate: dosEpoch,
			CRC32: crc32.ChecksumIEEE(data), CompressedSize64: uint64(len(data)), UncompressedSize64: uint64(len(data))}
		h.SetMode(0o644)
		w, err := zw.CreateRaw(h)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(data); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
