package workspace

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/hostfuncs"
)

// stableTree builds:
//
//	stable/hello.txt        "hello\nworld\n"
//	stable/sub/a.py         "import os\nprint('a')\n"
//	stable/sub/deep/b.py    "x = 1\n"
//	stable/bin.dat          invalid UTF-8
//	stable/.hidden          "h"
//	stable/inlink     ->    sub/a.py        (stays inside)
//	stable/dirlink    ->    sub             (stays inside)
//	stable/escape     ->    ../outside/secret.txt
//	stable/escapedir  ->    ../outside
//	stable/abslink    ->    <abs>/stable/hello.txt (absolute: refused)
//	outside/secret.txt      "secret"
func stableTree(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	stable := filepath.Join(base, "stable")
	files := map[string]string{
		"stable/hello.txt":     "hello\nworld\n",
		"stable/sub/a.py":      "import os\nprint('a')\n",
		"stable/sub/deep/b.py": "x = 1\n",
		"stable/bin.dat":       "\xff\xfe\x00binary",
		"stable/.hidden":       "h",
		"outside/secret.txt":   "secret",
	}
	for name, content := range files {
		p := filepath.Join(base, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	links := map[string]string{
		"inlink":    "sub/a.py",
		"dirlink":   "sub",
		"escape":    "../outside/secret.txt",
		"escapedir": "../outside",
		"abslink":   filepath.Join(stable, "hello.txt"),
	}
	for name, target := range links {
		require.NoError(t, os.Symlink(target, filepath.Join(stable, name)))
	}
	// A hard link has no direction: it is the outside file itself.
	require.NoError(t, os.Link(filepath.Join(base, "outside", "secret.txt"), filepath.Join(stable, "hardlink")))
	return stable
}

// treeHash hashes names, modes, link targets and contents under dir.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%s %v %d %d\n", rel, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			require.NoError(t, err)
			fmt.Fprintf(h, "-> %s\n", target)
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			h.Write(data)
		}
		return nil
	})
	require.NoError(t, err)
	return hex.EncodeToString(h.Sum(nil))
}

func newTestWorkspace(t *testing.T, cfg Config) (*Workspace, hostfuncs.Table) {
	t.Helper()
	w, err := New(cfg)
	require.NoError(t, err)
	tbl := hostfuncs.Table{}
	w.Register(tbl)
	return w, tbl
}

func TestNew(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))

	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"no stable", Config{}, ""},
		{"stable dir", Config{Stable: dir}, ""},
		{"missing stable", Config{Stable: filepath.Join(dir, "nope")}, "no such file"},
		{"stable is a file", Config{Stable: file}, "not a directory"},
		{"negative limit", Config{MaxFiles: -1}, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := New(tt.cfg)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.Nil(t, w)
				return
			}
			require.NoError(t, err)
			require.Empty(t, w.Changes())
		})
	}
}

func TestCleanPath(t *testing.T) {
	ok := []struct{ in, want string }{
		{"a.txt", "a.txt"},
		{"a/b.txt", "a/b.txt"},
		{"./a", "a"},
		{"a/./b", "a/b"},
		{"a//b", "a/b"},
		{"a/b/", "a/b"},
		{"a/../b", "b"},
		{".", "."},
		{"..a", "..a"},
		{"a..", "a.."},
		{"ünïcødé/файл", "ünïcødé/файл"},
		{strings.Repeat("a", MaxNameBytes), strings.Repeat("a", MaxNameBytes)},
	}
	for _, tt := range ok {
		t.Run("ok/"+tt.in, func(t *testing.T) {
			got, err := cleanPath(tt.in)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
	bad := []struct{ name, in string }{
		{"empty", ""},
		{"dotdot", ".."},
		{"parent", "../x"},
		{"nested escape", "a/../../x"},
		{"deep escape", "a/b/../../../x"},
		{"trailing dotdot", "a/../.."},
		{"absolute", "/etc/passwd"},
		{"root", "/"},
		{"NUL", "a\x00b"},
		{"backslash", `a\b`},
		{"backslash escape", `..\..\x`},
		{"newline", "a\nb"},
		{"DEL", "a\x7fb"},
		{"invalid UTF-8", "a\xffb"},
		{"too long", strings.Repeat("a/", MaxPathBytes/2+1)},
		{"long element", strings.Repeat("a", MaxNameBytes+1)},
	}
	for _, tt := range bad {
		t.Run("bad/"+tt.name, func(t *testing.T) {
			_, err := cleanPath(tt.in)
			requireGuestError(t, err, hostfuncs.PermissionError)
		})
	}
}

func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"a", "a/b", "../x", "a/../../x", "/etc/passwd", "a\x00b", `a\b`, ".", "./a/./b/", "a//b", "...", "a/..b/.."} {
		f.Add(s)
	}
	root := filepath.Join(string(filepath.Separator), "work", "root")
	f.Fuzz(func(t *testing.T, p string) {
		c, err := cleanPath(p)
		if err != nil {
			require.Equal(t, hostfuncs.PermissionError, hostfuncs.AsError(err).Type)
			return
		}
		require.True(t, c == "." || filepath.IsLocal(c), "not local: %q from %q", c, p)
		require.NotContains(t, c, "\x00")
		require.NotContains(t, c, `\`)
		require.False(t, strings.HasPrefix(c, "/"))
		for _, elem := range strings.Split(c, "/") {
			require.NotEqual(t, "..", elem)
			require.NotEmpty(t, elem)
		}
		joined := filepath.Join(root, filepath.FromSlash(c))
		require.True(t, joined == root || strings.HasPrefix(joined, root+string(filepath.Separator)), "%q escapes", joined)
		again, err := cleanPath(c)
		require.NoError(t, err)
		require.Equal(t, c, again, "not idempotent")
	})
}

func TestWorkspacePathRules(t *testing.T) {
	stable := stableTree(t)
	_, tbl := newTestWorkspace(t, Config{Stable: stable})

	refused := []struct{ name, path string }{
		{"traversal", "../outside/secret.txt"},
		{"nested traversal", "sub/../../outside/secret.txt"},
		{"absolute", "/etc/passwd"},
		{"NUL", "hello.txt\x00.png"},
		{"backslash", `sub\a.py`},
		{"empty", ""},
		{"over-long", strings.Repeat("x", MaxPathBytes+1)},
	}
	for _, tt := range refused {
		t.Run("read/"+tt.name, func(t *testing.T) {
			_, err := call(t, tbl, "read_file", M{"path": tt.path})
			requireGuestError(t, err, hostfuncs.PermissionError)
		})
		t.Run("write/"+tt.name, func(t *testing.T) {
			_, err := call(t, tbl, "write_file", M{"path": tt.path, "text": "x"})
			requireGuestError(t, err, hostfuncs.PermissionError)
		})
	}

	symlinks := []struct {
		name, path string
		want       string // content, or "" for hostfuncs.PermissionError
	}{
		{"file symlink inside", "inlink", "import os\nprint('a')\n"},
		{"dir symlink inside", "dirlink/deep/b.py", "x = 1\n"},
		{"file symlink outside", "escape", ""},
		{"dir symlink outside", "escapedir/secret.txt", ""},
		{"absolute symlink", "abslink", ""},
		{"hard link to outside", "hardlink", ""},
	}
	for _, tt := range symlinks {
		t.Run("symlink/"+tt.name, func(t *testing.T) {
			out, err := call(t, tbl, "read_file", M{"path": tt.path})
			if tt.want == "" {
				e := requireGuestError(t, err, hostfuncs.PermissionError)
				require.NotContains(t, e.Message, stable, "host path leaked")
				require.NotContains(t, string(out), "secret")
				return
			}
			require.NoError(t, err)
			require.JSONEq(t, mustJSON(t, tt.want), string(out))
		})
	}

	t.Run("write through outside symlink", func(t *testing.T) {
		_, err := call(t, tbl, "write_file", M{"path": "escapedir/new.txt", "text": "x"})
		requireGuestError(t, err, hostfuncs.PermissionError)
	})
}

func TestWorkspaceFileErrors(t *testing.T) {
	stable := stableTree(t)
	_, tbl := newTestWorkspace(t, Config{Stable: stable})
	_, err := call(t, tbl, "write_file", M{"path": "made/file.txt", "text": "x"})
	require.NoError(t, err)

	tests := []struct {
		name, op, path, want string
	}{
		{"missing", "read", "nope.txt", hostfuncs.FileNotFoundError},
		{"missing in missing dir", "read", "no/such/file", hostfuncs.FileNotFoundError},
		{"stable dir", "read", "sub", hostfuncs.IsADirectoryError},
		{"root", "read", ".", hostfuncs.IsADirectoryError},
		{"overlay dir", "read", "made", hostfuncs.IsADirectoryError},
		{"under stable file", "read", "hello.txt/x", hostfuncs.NotADirectoryError},
		{"under overlay file", "read", "made/file.txt/x", hostfuncs.NotADirectoryError},
		{"write stable dir", "write", "sub", hostfuncs.IsADirectoryError},
		{"write overlay dir", "write", "made", hostfuncs.IsADirectoryError},
		{"write root", "write", ".", hostfuncs.IsADirectoryError},
		{"write under stable file", "write", "hello.txt/x", hostfuncs.NotADirectoryError},
		{"write under overlay file", "write", "made/file.txt/x", hostfuncs.NotADirectoryError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.op == "read" {
				_, err = call(t, tbl, "read_file", M{"path": tt.path})
			} else {
				_, err = call(t, tbl, "write_file", M{"path": tt.path, "text": "x"})
			}
			requireGuestError(t, err, tt.want)
		})
	}

	t.Run("no stable layer", func(t *testing.T) {
		_, tbl := newTestWorkspace(t, Config{})
		_, err := call(t, tbl, "read_file", M{"path": "hello.txt"})
		requireGuestError(t, err, hostfuncs.FileNotFoundError)
	})
}

func TestWorkspaceStableNeverModified(t *testing.T) {
	stable := stableTree(t)
	outside := filepath.Join(filepath.Dir(stable), "outside")
	before, beforeOut := treeHash(t, stable), treeHash(t, outside)

	w, tbl := newTestWorkspace(t, Config{Stable: stable})
	ctx := context.Background()
	for _, p := range []string{"hello.txt", "sub/a.py", "inlink", "dirlink/new.py", "new/dir/file.txt", "bin.dat"} {
		_, err := call(t, tbl, "write_file", M{"path": p, "text": "overwritten " + p})
		require.NoError(t, err, p)
	}
	for _, p := range []string{"../outside/secret.txt", "escape", "escapedir/secret.txt", "abslink"} {
		_, err := call(t, tbl, "write_file", M{"path": p, "text": "pwned"})
		require.Error(t, err, p)
	}
	got, err := w.ReadFile(ctx, "hello.txt")
	require.NoError(t, err)
	require.Equal(t, "overwritten hello.txt", string(got), "overlay shadows stable")
	got, err = w.ReadFile(ctx, "sub/deep/b.py")
	require.NoError(t, err)
	require.Equal(t, "x = 1\n", string(got), "stable still visible")

	require.Equal(t, before, treeHash(t, stable), "stable dir modified")
	require.Equal(t, beforeOut, treeHash(t, outside), "outside dir modified")
	require.Len(t, w.Changes(), 6)
}

func TestWorkspaceLimits(t *testing.T) {
	ctx := context.Background()

	t.Run("oversize write", func(t *testing.T) {
		w, tbl := newTestWorkspace(t, Config{MaxFileBytes: 8})
		require.NoError(t, w.WriteFile(ctx, "ok", make([]byte, 8)))
		_, err := call(t, tbl, "write_file", M{"path": "big", "text": "123456789"})
		e := requireGuestError(t, err, hostfuncs.OSError)
		require.Contains(t, e.Message, "too large")
		_, ok := w.OverlayFile("big")
		require.False(t, ok)
	})

	t.Run("oversize stable read", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "big"), make([]byte, 9), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "ok"), make([]byte, 8), 0o644))
		_, tbl := newTestWorkspace(t, Config{Stable: dir, MaxFileBytes: 8})
		_, err := call(t, tbl, "read_file", M{"path": "big", "binary": true})
		requireGuestError(t, err, hostfuncs.OSError)
		_, err = call(t, tbl, "read_file", M{"path": "ok", "binary": true})
		require.NoError(t, err)
	})

	t.Run("overlay quota", func(t *testing.T) {
		w, tbl := newTestWorkspace(t, Config{MaxOverlayBytes: 10})
		require.NoError(t, w.WriteFile(ctx, "a", make([]byte, 6)))
		_, err := call(t, tbl, "write_file", M{"path": "b", "text": "123456"})
		e := requireGuestError(t, err, hostfuncs.OSError)
		require.Contains(t, e.Message, "quota")
		// Replacing a file counts its new size, not both.
		require.NoError(t, w.WriteFile(ctx, "a", make([]byte, 10)))
		require.NoError(t, w.WriteFile(ctx, "a", make([]byte, 4)))
		require.NoError(t, w.WriteFile(ctx, "b", make([]byte, 6)))
		requireGuestError(t, w.WriteFile(ctx, "c", []byte{1}), hostfuncs.OSError)
	})

	t.Run("file count", func(t *testing.T) {
		w, tbl := newTestWorkspace(t, Config{MaxFiles: 2})
		require.NoError(t, w.WriteFile(ctx, "a", nil))
		require.NoError(t, w.WriteFile(ctx, "b", nil))
		_, err := call(t, tbl, "write_file", M{"path": "c", "text": ""})
		e := requireGuestError(t, err, hostfuncs.OSError)
		require.Contains(t, e.Message, "file limit")
		require.NoError(t, w.WriteFile(ctx, "a", []byte("rewrite is fine")))
	})
}

func TestWorkspaceReadWrite(t *testing.T) {
	stable := stableTree(t)
	w, tbl := newTestWorkspace(t, Config{Stable: stable})

	t.Run("text", func(t *testing.T) {
		out, err := call(t, tbl, "read_file", M{"path": "hello.txt"})
		require.NoError(t, err)
		require.JSONEq(t, `"hello\nworld\n"`, string(out))
		out, err = call(t, tbl, "write_file", M{"path": "notes/ü.md", "text": "héllo"})
		require.NoError(t, err)
		require.JSONEq(t, `6`, string(out), "returns the UTF-8 byte count")
		out, err = call(t, tbl, "read_file", M{"path": "notes/ü.md"})
		require.NoError(t, err)
		require.JSONEq(t, `"héllo"`, string(out))
	})

	t.Run("not UTF-8", func(t *testing.T) {
		_, err := call(t, tbl, "read_file", M{"path": "bin.dat"})
		e := requireGuestError(t, err, hostfuncs.UnicodeError)
		require.Contains(t, e.Message, "binary=True")
		require.Contains(t, e.Message, "offset 0")
		out, err := call(t, tbl, "read_file", M{"path": "bin.dat", "binary": true})
		require.NoError(t, err)
		require.JSONEq(t, mustJSON(t, base64.StdEncoding.EncodeToString([]byte("\xff\xfe\x00binary"))), string(out))
	})

	t.Run("binary round trip", func(t *testing.T) {
		all := make([]byte, 256)
		for i := range all {
			all[i] = byte(i)
		}
		_, err := call(t, tbl, "write_file", M{"path": "all.bin", "data_b64": base64.StdEncoding.EncodeToString(all)})
		require.NoError(t, err)
		out, err := call(t, tbl, "read_file", M{"path": "all.bin", "binary": true})
		require.NoError(t, err)
		var b64 string
		require.NoError(t, json.Unmarshal(out, &b64))
		got, err := base64.StdEncoding.DecodeString(b64)
		require.NoError(t, err)
		require.Equal(t, all, got)
		data, ok := w.OverlayFile("all.bin")
		require.True(t, ok)
		require.Equal(t, all, data)
	})

	t.Run("empty file", func(t *testing.T) {
		_, err := call(t, tbl, "write_file", M{"path": "empty", "data_b64": ""})
		require.NoError(t, err)
		out, err := call(t, tbl, "read_file", M{"path": "empty", "binary": true})
		require.NoError(t, err)
		require.JSONEq(t, `""`, string(out), "empty bytes, not null")
		out, err = call(t, tbl, "read_file", M{"path": "empty"})
		require.NoError(t, err)
		require.JSONEq(t, `""`, string(out))
	})

	// Over the guest's transport the content comes attached, raw, and the
	// answer is raw bytes or text (JSON callers see base64 and a string).
	t.Run("attached data", func(t *testing.T) {
		ctx := hostfuncs.WithData(context.Background(), []byte("\x00raw\xff"))
		n, err := tbl["write_file"](ctx, json.RawMessage(`{"path": "att.bin"}`))
		require.NoError(t, err)
		require.Equal(t, 5, n)
		v, err := tbl["read_file"](context.Background(), json.RawMessage(`{"path": "att.bin", "binary": true}`))
		require.NoError(t, err)
		require.Equal(t, hostfuncs.Bytes("\x00raw\xff"), v)
		_, err = tbl["write_file"](hostfuncs.WithData(context.Background(), nil), json.RawMessage(`{"path": "att.txt"}`))
		require.NoError(t, err, "empty data is data")
		v, err = tbl["read_file"](context.Background(), json.RawMessage(`{"path": "att.txt"}`))
		require.NoError(t, err)
		require.Equal(t, hostfuncs.Text(""), v)
		_, err = tbl["write_file"](ctx, json.RawMessage(`{"path": "x", "text": "a"}`))
		requireGuestError(t, err, hostfuncs.TypeError)
		_, err = tbl["write_file"](ctx, json.RawMessage(`{"path": "x", "data_b64": "YQ=="}`))
		requireGuestError(t, err, hostfuncs.TypeError)
	})

	t.Run("returned bytes are a copy", func(t *testing.T) {
		ctx := context.Background()
		require.NoError(t, w.WriteFile(ctx, "copy", []byte("abc")))
		got, err := w.ReadFile(ctx, "copy")
		require.NoError(t, err)
		got[0] = 'X'
		again, _ := w.OverlayFile("copy")
		require.Equal(t, "abc", string(again))
	})

	badArgs := []struct{ name, args, want string }{
		{"text and data", `{"path": "x", "text": "a", "data_b64": "YQ=="}`, hostfuncs.TypeError},
		{"neither", `{"path": "x"}`, hostfuncs.TypeError},
		{"bad base64", `{"path": "x", "data_b64": "!!"}`, hostfuncs.ValueError},
		{"unknown key", `{"path": "x", "text": "a", "mode": "w"}`, hostfuncs.ValueError},
		{"wrong type", `{"path": 3, "text": "a"}`, hostfuncs.ValueError},
	}
	for _, tt := range badArgs {
		t.Run("write_file/"+tt.name, func(t *testing.T) {
			_, err := call(t, tbl, "write_file", tt.args)
			requireGuestError(t, err, tt.want)
		})
	}
}

func TestWorkspaceListFiles(t *testing.T) {
	stable := stableTree(t)
	w, tbl := newTestWorkspace(t, Config{Stable: stable})
	ctx := context.Background()
	require.NoError(t, w.WriteFile(ctx, "new.py", []byte("print(1)\n")))
	require.NoError(t, w.WriteFile(ctx, "sub/c.py", []byte("c\n")))
	require.NoError(t, w.WriteFile(ctx, "hello.txt", []byte("shadow\n")))

	tests := []struct {
		pattern *string
		want    []string
	}{
		// Default "*". Symlinks to directories, outside or absolute are not listed.
		{nil, []string{".hidden", "bin.dat", "hello.txt", "inlink", "new.py"}},
		{ptr("*"), []string{".hidden", "bin.dat", "hello.txt", "inlink", "new.py"}},
		{ptr("**"), []string{".hidden", "bin.dat", "hello.txt", "inlink", "new.py", "sub/a.py", "sub/c.py", "sub/deep/b.py"}},
		{ptr("**/*.py"), []string{"new.py", "sub/a.py", "sub/c.py", "sub/deep/b.py"}},
		{ptr("sub/*"), []string{"sub/a.py", "sub/c.py"}},
		{ptr("sub/**"), []string{"sub/a.py", "sub/c.py", "sub/deep/b.py"}},
		{ptr("./sub/**/b.py"), []string{"sub/deep/b.py"}},
		{ptr("**/deep/*"), []string{"sub/deep/b.py"}},
		{ptr("*.txt"), []string{"hello.txt"}},
		{ptr("h?llo.[st]xt"), []string{"hello.txt"}},
		{ptr("nothing/**"), []string{}},
		{ptr(""), []string{}},
	}
	for _, tt := range tests {
		name := "default"
		args := M{}
		if tt.pattern != nil {
			name, args["pattern"] = *tt.pattern, *tt.pattern
		}
		t.Run(name, func(t *testing.T) {
			out, err := call(t, tbl, "list_files", args)
			require.NoError(t, err)
			require.JSONEq(t, mustJSON(t, tt.want), string(out))
		})
	}

	for _, bad := range []string{"[", "sub/[a-", "/abs/*"} {
		t.Run("bad/"+bad, func(t *testing.T) {
			_, err := call(t, tbl, "list_files", M{"pattern": bad})
			requireGuestError(t, err, hostfuncs.ValueError)
		})
	}

	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := w.ListFiles(ctx, "**")
		require.ErrorIs(t, err, context.Canceled)
	})
}

func TestWorkspaceSearch(t *testing.T) {
	stable := stableTree(t)
	w, tbl := newTestWorkspace(t, Config{Stable: stable})
	ctx := context.Background()
	require.NoError(t, w.WriteFile(ctx, "notes.md", []byte("one\r\nimport this\r\nthree")))
	require.NoError(t, w.WriteFile(ctx, "blob", []byte("import\x00binary")))

	out, err := call(t, tbl, "search_files", M{"pattern": `^import\b`})
	require.NoError(t, err)
	require.JSONEq(t, `[
		{"path": "inlink", "line": 1, "text": "import os"},
		{"path": "notes.md", "line": 2, "text": "import this"},
		{"path": "sub/a.py", "line": 1, "text": "import os"}
	]`, string(out))

	out, err = call(t, tbl, "search_files", M{"pattern": `print|x =`, "glob": "sub/**/*.py"})
	require.NoError(t, err)
	require.JSONEq(t, `[
		{"path": "sub/a.py", "line": 2, "text": "print('a')"},
		{"path": "sub/deep/b.py", "line": 1, "text": "x = 1"}
	]`, string(out))

	out, err = call(t, tbl, "search_files", M{"pattern": `secret`, "glob": "**"})
	require.NoError(t, err)
	require.JSONEq(t, `[]`, string(out), "nothing from outside the stable dir")

	t.Run("bounded", func(t *testing.T) {
		w, _ := newTestWorkspace(t, Config{})
		long := strings.Repeat("é", MaxSearchLineBytes) // 2 bytes each
		var b bytes.Buffer
		for range MaxSearchResults + 50 {
			b.WriteString("hit " + long + "\n")
		}
		require.NoError(t, w.WriteFile(ctx, "many", b.Bytes()))
		matches, err := w.Search(ctx, "hit", "**")
		require.NoError(t, err)
		require.Len(t, matches, MaxSearchResults)
		require.LessOrEqual(t, len(matches[0].Text), MaxSearchLineBytes)
		require.True(t, strings.HasPrefix(matches[0].Text, "hit é"))
		require.Equal(t, MaxSearchResults, matches[len(matches)-1].Line)
	})

	// Matching a big expression against long lines costs seconds; the
	// deadline must cut it short, between lines and inside one.
	t.Run("deadline", func(t *testing.T) {
		for name, data := range map[string]string{
			"many lines": strings.Repeat(strings.Repeat("ab", 600)+"\n", 1000),
			"one line":   strings.Repeat("ab", 1<<20),
		} {
			t.Run(name, func(t *testing.T) {
				w, _ := newTestWorkspace(t, Config{})
				require.NoError(t, w.WriteFile(ctx, "big.txt", []byte(data)))
				ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				defer cancel()
				start := time.Now()
				_, err := w.Search(ctx, "[ab]{1000}c", "big.txt")
				require.ErrorIs(t, err, context.DeadlineExceeded)
				require.Less(t, time.Since(start), 450*time.Millisecond) // the old search ran for seconds; room for a loaded machine
			})
		}
	})

	bad := []struct {
		name string
		args M
		want string
	}{
		{"bad regexp", M{"pattern": "("}, hostfuncs.ValueError},
		{"huge regexp", M{"pattern": strings.Repeat("a", 5000)}, hostfuncs.ValueError},
		{"no pattern", M{}, hostfuncs.TypeError},
		{"bad glob", M{"pattern": "x", "glob": "["}, hostfuncs.ValueError},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := call(t, tbl, "search_files", tt.args)
			requireGuestError(t, err, tt.want)
		})
	}
}

func TestWorkspaceChanges(t *testing.T) {
	w, _ := newTestWorkspace(t, Config{Stable: stableTree(t)})
	ctx := context.Background()
	require.NoError(t, w.WriteFile(ctx, "z.txt", []byte("z")))
	require.NoError(t, w.WriteFile(ctx, "./a/b.txt", []byte("first")))
	require.NoError(t, w.WriteFile(ctx, "a/b.txt", []byte("second")))
	require.NoError(t, w.WriteFile(ctx, "empty", nil))

	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	require.Equal(t, []FileChange{
		{Path: "a/b.txt", Size: 6, SHA256: sum("second")},
		{Path: "empty", Size: 0, SHA256: sum("")},
		{Path: "z.txt", Size: 1, SHA256: sum("z")},
	}, w.Changes())

	data, ok := w.OverlayFile("a/b.txt")
	require.True(t, ok)
	require.Equal(t, "second", string(data))
	_, ok = w.OverlayFile("hello.txt")
	require.False(t, ok, "stable files are not overlay files")
	_, ok = w.OverlayFile("../x")
	require.False(t, ok)
}

func TestWorkspaceConcurrent(t *testing.T) {
	w, _ := newTestWorkspace(t, Config{MaxFiles: 50})
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Go(func() {
			p := fmt.Sprintf("d%d/f%d", i%7, i)
			if err := w.WriteFile(ctx, p, []byte(p)); err != nil {
				errs <- err
				return
			}
			if _, err := w.ReadFile(ctx, p); err != nil {
				errs <- err
			}
			w.Changes()
			_, _ = w.ListFiles(ctx, "**")
		})
	}
	wg.Wait()
	close(errs)
	n := 0
	for err := range errs {
		require.Equal(t, hostfuncs.OSError, hostfuncs.AsError(err).Type, "only the file limit may fail: %v", err)
		n++
	}
	require.Equal(t, 50, n)
	require.Len(t, w.Changes(), 50)
}

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern, path string
		match         bool
	}{
		{"*", "a", true},
		{"*", "a/b", false},
		{"**", "a", true},
		{"**", "a/b/c", true},
		{"**/*.py", "x.py", true},
		{"**/*.py", "a/b/x.py", true},
		{"**/*.py", "a/b/x.pyc", false},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "a/x/y/c", false},
		{"a/**/**/b", "a/b", true},
		{"**/a/**/a/**/a/**/b", strings.Repeat("a/", 40) + "c", false},
		{"a/*", "a/b", true},
		{"a/*", "a", false},
		{"a//b", "a/b", true},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+"~"+tt.path, func(t *testing.T) {
			g, err := compileGlob(tt.pattern)
			require.NoError(t, err)
			require.Equal(t, tt.match, g.match(tt.path))
		})
	}

	descend := []struct {
		pattern, dir string
		ok           bool
	}{
		{"*", "a", false},
		{"a/*", "a", true},
		{"a/*", "b", false},
		{"**/x", "a/b", true},
		{"a/b/*", "a", true},
		{"a/b/*", "a/c", false},
	}
	for _, tt := range descend {
		t.Run("descend/"+tt.pattern+"~"+tt.dir, func(t *testing.T) {
			g, err := compileGlob(tt.pattern)
			require.NoError(t, err)
			require.Equal(t, tt.ok, g.canDescend(tt.dir))
		})
	}
}

func FuzzGlob(f *testing.F) {
	f.Add("**/*.py", "a/b/c.py")
	f.Add("[a-", "a")
	f.Add("a/**/b/**", "a/x/b/y")
	f.Fuzz(func(t *testing.T, pattern, p string) {
		g, err := compileGlob(pattern)
		if err != nil {
			require.Equal(t, hostfuncs.ValueError, hostfuncs.AsError(err).Type)
			return
		}
		if g.match(p) && strings.Contains(p, "/") {
			dir := p[:strings.LastIndexByte(p, '/')]
			require.True(t, g.canDescend(dir), "matches %q but would not descend into %q", p, dir)
		}
	})
}

func ptr[T any](v T) *T { return &v }

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
