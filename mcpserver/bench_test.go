package mcpserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmpy/wasmpy/mcpserver"
	"github.com/wasmpy/wasmpy/runs"
)

// BenchmarkToolsCall measures one tools/call round trip from the Go SDK's
// client, p50 and p99, over each transport: in memory (the SDK alone), stdio
// (kernel pipes, our line filter, the SDK's framing) and streamable HTTP
// (loopback TCP, one SSE response per call). list_files is the protocol
// with no run; run_python runs print(1) in a fresh instance.
func BenchmarkToolsCall(b *testing.B) {
	ctx := context.Background()
	transports := []struct {
		name    string
		connect func(b *testing.B, srv *mcpserver.Server) mcp.Transport
	}{
		{"inmemory", func(b *testing.B, srv *mcpserver.Server) mcp.Transport {
			ct, st := mcp.NewInMemoryTransports()
			if _, err := srv.Connect(ctx, st); err != nil {
				b.Fatal(err)
			}
			return ct
		}},
		{"stdio", func(b *testing.B, srv *mcpserver.Server) mcp.Transport {
			toServer, fromClient, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			fromServer, toClient, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { fromClient.Close(); toClient.Close() })
			if _, err := srv.Connect(ctx, mcpserver.NewStdioTransport(toServer, toClient)); err != nil {
				b.Fatal(err)
			}
			return &mcp.IOTransport{Reader: fromServer, Writer: fromClient}
		}},
		{"http", func(b *testing.B, srv *mcpserver.Server) mcp.Transport {
			hs := httptest.NewServer(srv.Handler())
			b.Cleanup(hs.Close)
			return &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{}, DisableStandaloneSSE: true}
		}},
	}
	calls := []struct {
		name string
		args map[string]any
	}{
		{"list_files", map[string]any{}},
		{"run_python", map[string]any{"code": "print(1)"}},
	}
	// The yardstick: the same run through the execution core, no MCP.
	b.Run("core/run_python", func(b *testing.B) {
		ex, _ := fixtures(b)
		dir := b.TempDir()
		lat := make([]time.Duration, 0, b.N)
		do := func() time.Duration {
			start := time.Now()
			x, err := ex.Exec(ctx, runs.ExecRequest{Code: "print(1)", Workspace: dir})
			if err != nil || x.Error != nil {
				b.Fatalf("%v %v", err, x)
			}
			return time.Since(start)
		}
		for range 5 {
			do()
		}
		b.ResetTimer()
		for range b.N {
			lat = append(lat, do())
		}
		b.StopTimer()
		report(b, lat)
	})
	for _, tr := range transports {
		for _, call := range calls {
			b.Run(tr.name+"/"+call.name, func(b *testing.B) {
				srv := newServer(b, nil)
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, tr.connect(b, srv), nil)
				if err != nil {
					b.Fatal(err)
				}
				defer cs.Close()
				params := &mcp.CallToolParams{Name: call.name, Arguments: call.args}
				do := func() time.Duration {
					start := time.Now()
					res, err := cs.CallTool(ctx, params)
					if err != nil || res.IsError {
						b.Fatalf("%s: %v %v", call.name, err, res)
					}
					return time.Since(start)
				}
				for range 5 { // warm up: connection, parked instances
					do()
				}
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for range b.N {
					lat = append(lat, do())
				}
				b.StopTimer()
				report(b, lat)
			})
		}
	}
}

func report(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
