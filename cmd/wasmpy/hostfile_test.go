package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Every file the CLI is handed is checked before it is read: a device, a
// FIFO or a sparse file past its bound is one line naming the file and
// why, exit 2, at once (it used to read /dev/zero until memory ran out,
// wait on a FIFO forever, and read a sparse file of gigabytes whole).
func TestHostFilesRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	sparse := filepath.Join(dir, "sparse")
	f, err := os.Create(sparse)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(1288490189)) // 1.2 GiB, nothing written
	require.NoError(t, f.Close())
	env, _ := residentEnv(t)
	for _, file := range []struct{ name, path, why string }{
		{"zero", "/dev/zero", "not a regular file (a character device)"},
		{"fifo", fifo, "not a regular file (a FIFO)"},
		{"sparse", sparse, "1.2 GiB, more than the limit of %s"},
	} {
		for _, tc := range []struct {
			name   string
			args   []string
			prefix string
			bound  string
		}{
			{"session", []string{"exec", "--session", file.path, "-c", "pass"}, "--session ", "273 MiB"},
			{"packages", []string{"exec", "--packages", file.path, "-c", "pass"}, "", "1 GiB"},
			{"interpreter", []string{"exec", "--interpreter", file.path, "-c", "pass"}, "interpreter ", "256 MiB"},
			{"pkg show", []string{"pkg", "show", file.path}, "", "1 GiB"},
			{"tokens", []string{"serve", "--tokens-file", file.path, "--addr", "127.0.0.1:0"}, "--tokens-file ", "1 MiB"},
		} {
			t.Run(file.name+"/"+tc.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
				defer cancel()
				cmd := exec.CommandContext(ctx, wasmpyBinary(t), tc.args...)
				cmd.Env = env
				var stdout, stderr strings.Builder
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				require.NoError(t, ctx.Err(), "hung: %s", stderr.String())
				var ee *exec.ExitError
				require.ErrorAs(t, err, &ee, stderr.String())
				require.Equal(t, exitUsage, ee.ExitCode(), stderr.String())
				why := file.why
				if strings.Contains(why, "%s") {
					why = strings.Replace(why, "%s", tc.bound, 1)
				}
				require.Equal(t, "wasmpy: "+tc.prefix+file.path+": "+why+"\n", stderr.String())
				require.Empty(t, stdout.String())
			})
		}
	}
}
