package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func echoServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		io.WriteString(w, r.Method+" "+string(b))
	}))
	t.Cleanup(srv.Close)
	return srv
}

const urlopenScript = `
import sys, urllib.request
try:
    print(urllib.request.urlopen(sys.argv[1], data=b"hi").read().decode())
except OSError as e:
    print("refused:", e)
`

func TestExecAllowHTTP(t *testing.T) {
	srv := echoServer(t)
	host := strings.TrimPrefix(srv.URL, "http://")
	script := writeScript(t, "get.py", urlopenScript)

	code, out, errOut := wasmpyCLI(t, "", "exec", "--allow-http", host, script, srv.URL)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "POST hi\n", out)

	// Without the flag, even the trusted tier (every built-in) has no network.
	code, out, _ = wasmpyCLI(t, "", "exec", script, srv.URL)
	require.Equal(t, 0, code)
	require.Contains(t, out, "refused: <urlopen error [Errno 2] network access is not granted to this run")
	require.Contains(t, out, "--allow-http HOST")

	// Another host only: this one is refused, named.
	code, out, _ = wasmpyCLI(t, "", "exec", "--allow-http", "*.example.com", "--allow-http", "api.example.org:443", script, srv.URL)
	require.Equal(t, 0, code)
	require.Contains(t, out, "refused: <urlopen error http_request: host "+host+" is not on the allow-list (*.example.com, api.example.org:443)>")

	code, out, _ = wasmpyCLI(t, "", "exec", "--json", "--allow-http", host, script, srv.URL)
	require.Equal(t, 0, code)
	require.Contains(t, out, `"http": [`)
	require.Contains(t, out, `"url": "`+srv.URL+`"`)
}

func TestExecAllowHTTPBadPattern(t *testing.T) {
	for _, bad := range []string{"https://example.com", "*", "example.com:99999", ""} {
		code, _, errOut := wasmpyCLI(t, "", "exec", "--allow-http", bad, "-c", "pass")
		require.Equal(t, exitUsage, code, bad)
		require.Contains(t, errOut, "--allow-http: ", bad)
		require.NotContains(t, errOut, "goroutine")
	}
	code, _, errOut := wasmpyCLI(t, "", "exec", "--grant", "read_file,http_request", "-c", "pass")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "--grant: http_request is granted with the hosts it may reach: --allow-http HOST")
}

// The resident serves the sci interpreter by its name (it took "sci" for a
// path, so every sci run started a process of its own) and runs granted
// http_request as the client asked.
func TestResidentServesSciAndHTTP(t *testing.T) {
	srv := echoServer(t)
	host := strings.TrimPrefix(srv.URL, "http://")
	env, _ := residentEnv(t)
	startTestResident(t, env)
	dir := t.TempDir()
	cases := [][]string{
		{"exec", "--interpreter", "sci", "-c", "import numpy; print(numpy.arange(4).sum())"},
		{"exec", "--allow-http", host, "-c", "import urllib.request; print(urllib.request.urlopen('" + srv.URL + "', data=b'r').read().decode())"},
		{"exec", "-c", "import urllib.request; urllib.request.urlopen('" + srv.URL + "')"},
	}
	want := []string{"6\n", "POST r\n", ""}
	for i, args := range cases {
		_, before := residentRuns(t, env)
		got := wasmpyIn(t, env, dir, strings.NewReader(""), args...)
		_, after := residentRuns(t, env)
		require.Equal(t, before+1, after, "the resident ran %v", args)
		require.Equal(t, want[i], got.Stdout, got.Stderr)
		local := wasmpyIn(t, append(env, "WASMPY_RESIDENT=0"), dir, strings.NewReader(""), args...)
		require.Equal(t, local, got)
	}
}
