package codegen

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// cacheVersion changes when what a key covers or an entry holds changes.
const cacheVersion = 2

const maxCacheEntry = 16 << 20

// cacheKey hashes everything that shapes the code the model writes: the
// mode, the server and the model, the templates and the rendered prompt
// (which holds the task or signature and the rules).
func cacheKey(kind, baseURL, model, templates, system, user string) string {
	h := sha256.New()
	b, _ := json.Marshal([]any{cacheVersion, kind, baseURL, model, templates, system, user})
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// cacheEntry is one file of the cache.
type cacheEntry struct {
	Version  int       `json:"version"`
	Kind     string    `json:"kind"`
	Model    string    `json:"model"`
	Code     string    `json:"code"`
	Tests    string    `json:"tests,omitempty"` // the unittest module that passed with Code
	Verified string    `json:"verified"`        // "ran" or "validated" (a dry run)
	Created  time.Time `json:"created"`
}

// codeCache is a directory of JSON files named by key. A missing, unreadable
// or malformed entry is a miss: the cache never fails a generation.
type codeCache struct{ dir string }

func (c *codeCache) path(key string) string { return filepath.Join(c.dir, key+".json") }

func (c *codeCache) get(key string) (*cacheEntry, bool) {
	if c == nil {
		return nil, false
	}
	f, err := os.Open(c.path(key))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCacheEntry+1))
	if err != nil || len(data) > maxCacheEntry {
		return nil, false
	}
	var e cacheEntry
	if json.Unmarshal(data, &e) != nil || e.Version != cacheVersion || e.Code == "" {
		return nil, false
	}
	return &e, true
}

// put writes an entry atomically (a temporary file renamed into place).
func (c *codeCache) put(key string, e cacheEntry) error {
	if c == nil {
		return nil
	}
	e.Version, e.Created = cacheVersion, time.Now().UTC()
	data, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return fmt.Errorf("codegen: cache: %w", err)
	}
	tmp, err := os.CreateTemp(c.dir, key+".*.tmp")
	if err != nil {
		return fmt.Errorf("codegen: cache: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("codegen: cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), c.path(key)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("codegen: cache: %w", err)
	}
	return nil
}

// remove drops an entry whose code failed.
func (c *codeCache) remove(key string) {
	if c == nil {
		return
	}
	_ = os.Remove(c.path(key)) // if it stays, it costs one wasted attempt next time
}
