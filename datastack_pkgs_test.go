package wasmpy_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/hostfuncs"
	"github.com/wasmpy/wasmpy/packages"
)

// lockSet builds the named packages of assets/build/packages.lock (as
// `make packages` unpacks them) into a set, for tests of one library.
func lockSet(t *testing.T, names ...string) string {
	t.Helper()
	var inputs []string
	for _, in := range debianInputs(t) {
		for _, n := range names {
			if strings.HasPrefix(filepath.Base(in), n+"_") {
				inputs = append(inputs, in)
			}
		}
	}
	require.Len(t, inputs, len(names))
	set, _, err := packages.Build(context.Background(), packages.BuildOptions{Inputs: inputs, Python: compileIn(testSandbox(t))})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "set.zip")
	require.NoError(t, os.WriteFile(path, set, 0o644))
	return path
}

// requests, from a package set, goes through http_request: the code is
// what it would be on any machine.
func TestRequestsOverHTTPRequest(t *testing.T) {
	set := lockSet(t, "python3-requests", "python3-urllib3", "python3-idna", "python3-certifi", "python3-chardet", "python3-six")
	sb := newSandbox(t, wasmpy.Config{Packages: []string{set}})
	srv, hostPort := httpServer(t)
	code := strings.ReplaceAll(`
import requests
r = requests.put(URL + "/echo", data=b"body", headers={"X-Test": "req"}, timeout=(5, 10))
print(r.status_code, r.ok, r.headers["x-seen"], r.text, r.encoding)
r = requests.get(URL + "/missing")
print(r.status_code, r.reason)
try:
    r.raise_for_status()
except requests.HTTPError as e:
    print("HTTPError", e.response.status_code)
r = requests.get(URL + "/gzip")
print(r.text, r.headers["X-Accept-Encoding"])
s = requests.Session()
print(s.get(URL + "/redirect-ok").text, s.post(URL + "/echo", json={"a": 1}).text)
for url in ("http://example.invalid/", URL + "/hang"):
    try:
        requests.get(url, timeout=0.3)
    except requests.ConnectionError as e:
        print("ConnectionError", e)
    except requests.Timeout as e:
        print("Timeout", e)
`, "URL", `"`+srv.URL+`"`)
	res := runIn(t, sb, httpJob(code, hostfuncs.HTTPPolicy{Hosts: []string{hostPort}}))
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "200 True req PUT body utf-8\n404 Not Found\nHTTPError 404\nunzipped gzip, deflate\nGET  POST {\"a\": 1}\n"+
		"ConnectionError http_request: host example.invalid:80 is not on the allow-list ("+hostPort+")\n"+
		"Timeout http_request: no answer within 300ms\n", res.Stdout)

	// Not granted: requests' own ConnectionError, naming the grant.
	res = runIn(t, sb, wasmpy.Job{Code: `
import requests
try:
    requests.get("https://example.com/")
except requests.ConnectionError as e:
    print(e)
`})
	require.Nil(t, res.Error, res.Stderr)
	require.Contains(t, res.Stdout, "network access is not granted to this run")
}

// The pure-Python chart libraries from Debian draw in the sandbox, and
// show() hands their pictures back.
func TestChartLibraries(t *testing.T) {
	set := lockSet(t, "python3-pygal", "python3-importlib-metadata", "python3-zipp", "python3-svgwrite", "python3-png")
	sb := newSandbox(t, wasmpy.Config{Packages: []string{set}})
	res := runIn(t, sb, wasmpy.Job{Code: `
import io, png, pygal, svgwrite, wasmpy
chart = pygal.Bar(title="sales")
chart.add("2025", [1, 3, 2])
drawing = svgwrite.Drawing(size=(10, 10))
drawing.add(drawing.circle((5, 5), 4))
buf = io.BytesIO()
png.Writer(2, 1, greyscale=True).write(buf, [[0, 255]])
print(wasmpy.show(chart), wasmpy.show(drawing), wasmpy.show(buf.getvalue()))
`})
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "/workspace/figure-1.svg /workspace/figure-2.svg /workspace/figure-3.png\n", res.Stdout)
	require.Len(t, res.Images, 3)
	require.Contains(t, string(res.Images[0].Data), "sales")
	require.Equal(t, "image/svg+xml", res.Images[1].MIMEType)
	require.Equal(t, "image/png", res.Images[2].MIMEType)
}
