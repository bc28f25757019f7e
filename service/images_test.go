package service_test

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/service"
)

// POST /exec answers with the images the run wrote, their data base64.
func TestExecImages(t *testing.T) {
	s := startServer(t, func(c *service.Config) { c.EnableExec = true })
	r := s.do(t, "POST", "/exec", `{"code": "import wasmpy\nprint(wasmpy.show('<svg xmlns=\"http://www.w3.org/2000/svg\"/>'))"}`)
	require.Equal(t, 200, r.status, r.raw)
	run := r.body["run"].(map[string]any)
	require.Equal(t, "/workspace/figure-1.svg\n", run["stdout"])
	images := run["images"].([]any)
	require.Len(t, images, 1)
	im := images[0].(map[string]any)
	require.Equal(t, "figure-1.svg", im["path"])
	require.Equal(t, "image/svg+xml", im["mime_type"])
	data, err := base64.StdEncoding.DecodeString(im["data"].(string))
	require.NoError(t, err)
	require.Equal(t, `<svg xmlns="http://www.w3.org/2000/svg"/>`, string(data))
}
