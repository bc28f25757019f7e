package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// `wasmpy mcp` serves the interpreter with numpy when it is installed
// (make builds it); --interpreter still picks, and the default one's
// ModuleNotFoundError says where numpy is.
func TestMCPServesNumpy(t *testing.T) {
	requireCapabilities(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runPy := func(args []string, code string) *mcp.CallToolResult {
		cmd := exec.Command(wasmpyBinary(t), append([]string{"mcp", "--db", filepath.Join(t.TempDir(), "p.db"), "--timeout", "30s"}, args...)...)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "numpy-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		require.NoError(t, err)
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code}})
		require.NoError(t, err)
		return res
	}
	res := runPy(nil, "import numpy as np\nprint(np.linspace(0, 1, 3).tolist())")
	require.False(t, res.IsError, toolText(res))
	require.Equal(t, "[0.0, 0.5, 1.0]\n", res.StructuredContent.(map[string]any)["stdout"])

	res = runPy([]string{"--interpreter", "core"}, "import numpy")
	require.True(t, res.IsError)
	require.Contains(t, toolText(res), "No module named 'numpy'; numpy is in wasmpy's sci interpreter")
}
