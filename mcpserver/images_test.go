package mcpserver_test

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/mcpserver"
)

// A run's images come back as MCP image content, each beside its entry in
// the structured content; one past the size bound is listed, not sent.
func TestRunPythonImages(t *testing.T) {
	c := connect(t, newServer(t, nil))
	res := call(t, c, "run_python", map[string]any{"code": `
import struct, zlib, wasmpy
raw = b"\x00\xff\x00\x00"
def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
       + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
wasmpy.show(png)
open("chart.svg", "w").write('<svg xmlns="http://www.w3.org/2000/svg"><circle r="1"/></svg>')
open("huge.png", "wb").write(png + bytes(3 << 20))
open("notes.txt", "w").write("not an image")
`}, nil)
	require.False(t, res.IsError, text(res))
	var images []*mcp.ImageContent
	for _, c := range res.Content {
		if im, ok := c.(*mcp.ImageContent); ok {
			images = append(images, im)
		}
	}
	require.Len(t, images, 2)
	mimes := map[string][]byte{}
	for _, im := range images {
		mimes[im.MIMEType] = im.Data
	}
	require.Equal(t, "\x89PNG\r\n\x1a\n", string(mimes["image/png"][:8]))
	require.Contains(t, string(mimes["image/svg+xml"]), "<circle")
	out := structured[mcpserver.RunOutput](t, res)
	require.Len(t, out.Images, 3)
	omitted := map[string]string{}
	for _, im := range out.Images {
		omitted[im.Path] = im.Omitted
	}
	require.Equal(t, map[string]string{"figure-1.png": "", "chart.svg": "", "huge.png": "larger than 2097152 bytes"}, omitted)
	require.Contains(t, text(res), "image huge.png not shown: larger than 2097152 bytes")
}
