package wasmpy_test

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/hostfuncs"
)

// httpServer is a local server on loopback: /echo answers the method,
// the X-Test header and the body; /redirect-ok goes to /echo, /redirect-off
// to a port not on the list; /big answers 4 KiB; /hang answers only when
// the test ends.
func httpServer(t *testing.T) (srv *httptest.Server, hostPort string) {
	hang := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Seen", r.Header.Get("X-Test"))
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, r.Method+" "+string(body))
	})
	mux.HandleFunc("/redirect-ok", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/echo", http.StatusFound)
	})
	mux.HandleFunc("/redirect-off", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://localhost:1/", http.StatusFound)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Repeat("x", 4096)))
	})
	mux.HandleFunc("/gzip", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Accept-Encoding", r.Header.Get("Accept-Encoding"))
		w.Header().Set("Content-Encoding", "gzip")
		gz := gzip.NewWriter(w)
		io.WriteString(gz, "unzipped")
		gz.Close()
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such thing", http.StatusNotFound)
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(hang) }) // runs first: the handler returns, Close does not wait
	return srv, srv.Listener.Addr().String()
}

func httpJob(code string, policy hostfuncs.HTTPPolicy) wasmpy.Job {
	return wasmpy.Job{Code: code, Grants: []wasmpy.Capability{wasmpy.HTTPRequest}, HTTP: &policy}
}

func TestHTTPNotGranted(t *testing.T) {
	srv, _ := httpServer(t)
	res := run(t, wasmpy.Job{Code: strings.ReplaceAll(`
import socket, urllib.request, urllib.error
for f in (lambda: urllib.request.urlopen(URL), lambda: socket.create_connection(("example.com", 80)),
          lambda: socket.getaddrinfo("example.com", 443), lambda: socket.socket().connect(("10.0.0.1", 80)),
          lambda: http_request("GET", URL)):
    try:
        f()
    except OSError as e:
        print(type(e).__name__, "http_request" in str(e))
`, "URL", `"`+srv.URL+`/echo"`)})
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "URLError True\nPermissionError True\nPermissionError True\nPermissionError True\nPermissionError True\n", res.Stdout)
	require.Empty(t, res.HTTP)
}

func TestHTTPThroughUrllib(t *testing.T) {
	srv, hostPort := httpServer(t)
	res := run(t, httpJob(strings.ReplaceAll(`
import json, urllib.request, urllib.error
req = urllib.request.Request(URL + "/echo", data=b"hello", headers={"X-Test": "yes"}, method="PUT")
with urllib.request.urlopen(req) as r:
    print(r.status, r.headers["X-Seen"], r.read().decode())
with urllib.request.urlopen(URL + "/redirect-ok") as r:
    print(r.status, r.geturl().endswith("/echo"), r.read().decode())
try:
    urllib.request.urlopen(URL + "/missing")
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode().strip())
opener = urllib.request.build_opener()
print(opener.open(URL + "/echo", data=b"x").read().decode())
import wasmpy
ans = wasmpy.http_request("post", URL + "/echo", headers=[("X-Test", 1)], body="é")
print(ans["status"], ans["reason"], ans["body"].decode(), dict(ans["headers"])["X-Seen"])
`, "URL", `"`+srv.URL+`"`), hostfuncs.HTTPPolicy{Hosts: []string{hostPort}}))
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "200 yes PUT hello\n200 True GET \n404 no such thing\nPOST x\n200 OK POST é 1\n", res.Stdout)
	require.Len(t, res.HTTP, 6) // the redirect is two
	require.Equal(t, hostfuncs.HTTPRecord{Method: "PUT", URL: srv.URL + "/echo", Status: 200, SentBytes: 5, RecvBytes: 9}, noTime(res.HTTP[0]))
	require.Equal(t, 302, res.HTTP[1].Status)
	require.Equal(t, srv.URL+"/echo", res.HTTP[2].URL)
	calls := 0
	for _, c := range res.HostCalls {
		if c.Name == "http_request" {
			calls++
		}
	}
	require.Equal(t, 5, calls)
}

func noTime(r hostfuncs.HTTPRecord) hostfuncs.HTTPRecord { r.DurationMS = 0; return r }

func TestHTTPRefusals(t *testing.T) {
	srv, hostPort := httpServer(t)
	try := `
import urllib.request
try:
    urllib.request.urlopen(URL)
    print("reached")
except BaseException as e:
    print(type(e).__name__, getattr(e, "reason", e))
`
	cases := []struct {
		name, path string
		policy     hostfuncs.HTTPPolicy
		want       string
	}{
		{"off-list host", "http://example.invalid/", hostfuncs.HTTPPolicy{Hosts: []string{hostPort}},
			"URLError http_request: host example.invalid:80 is not on the allow-list (" + hostPort + ")"},
		{"off-list port", "http://127.0.0.1:1/", hostfuncs.HTTPPolicy{Hosts: []string{hostPort}},
			"URLError http_request: host 127.0.0.1:1 is not on the allow-list"},
		{"loopback by a name not listed", srv.URL + "/echo", hostfuncs.HTTPPolicy{Hosts: []string{"*.0.0.1"}},
			"is not on the allow-list"},
		{"off-list redirect", srv.URL + "/redirect-off", hostfuncs.HTTPPolicy{Hosts: []string{hostPort}},
			"URLError redirect to http://localhost:1/ refused: host localhost:1 is not on the allow-list"},
		{"scheme", srv.URL + "/echo", hostfuncs.HTTPPolicy{Hosts: []string{hostPort}, Schemes: []string{"https"}},
			`URLError http_request: scheme "http" is not allowed (allowed: https)`},
		{"method", srv.URL + "/echo", hostfuncs.HTTPPolicy{Hosts: []string{hostPort}, Methods: []string{"POST"}},
			"URLError http_request: method GET is not allowed (allowed: POST)"},
		{"response past its limit", srv.URL + "/big", hostfuncs.HTTPPolicy{Hosts: []string{hostPort}, MaxResponseBytes: 1000},
			"URLError http_request: the response body of " + srv.URL + "/big is larger than the limit of 1000 bytes"},
		{"response past the budget", srv.URL + "/big", hostfuncs.HTTPPolicy{Hosts: []string{hostPort}, MaxBytes: 1000},
			"BudgetExceeded http_request byte budget exhausted"},
		{"no answer in time", srv.URL + "/hang", hostfuncs.HTTPPolicy{Hosts: []string{hostPort}, Timeout: 300 * time.Millisecond},
			"URLError http_request: no answer within 300ms"},
		{"any port of the address", srv.URL + "/echo", hostfuncs.HTTPPolicy{Hosts: []string{"127.0.0.1"}}, "reached"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := run(t, httpJob(strings.Replace(try, "URL", `"`+c.path+`"`, 1), c.policy))
			require.Nil(t, res.Error, res.Stderr)
			require.Contains(t, res.Stdout, c.want)
			require.NotEmpty(t, res.HTTP)
			if c.want != "reached" {
				require.NotEmpty(t, res.HTTP[len(res.HTTP)-1].Error)
			}
		})
	}
}

func TestHTTPBudgets(t *testing.T) {
	srv, hostPort := httpServer(t)
	res := run(t, httpJob(strings.ReplaceAll(`
import wasmpy
try:
    wasmpy.http_request("POST", URL, body=b"x" * 2000)
except BudgetExceeded as e:
    print("body:", e)
for i in range(3):
    try:
        print(wasmpy.http_request("GET", URL)["status"])
    except BudgetExceeded as e:
        print("requests:", e)
`, "URL", `"`+srv.URL+`/echo"`), hostfuncs.HTTPPolicy{Hosts: []string{hostPort}, MaxBytes: 1000, MaxRequests: 2}))
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "body: http_request byte budget exhausted: 0 bytes used, 2000 more asked, the limit is 1000\n"+
		"200\nrequests: http_request budget exhausted: 2 requests made (redirects included), the limit is 2\n"+
		"requests: http_request budget exhausted: 2 requests made (redirects included), the limit is 2\n", res.Stdout)
}

// TestHTTPWithinTheRunDeadline: a request the server never answers ends
// with the run, at its deadline, though the policy allows it longer.
func TestHTTPWithinTheRunDeadline(t *testing.T) {
	srv, hostPort := httpServer(t)
	job := httpJob(`import urllib.request; urllib.request.urlopen("`+srv.URL+`/hang")`, hostfuncs.HTTPPolicy{Hosts: []string{hostPort}, Timeout: time.Hour})
	job.Limits.Timeout = time.Second
	res := run(t, job)
	require.NotNil(t, res.Error)
	require.Equal(t, wasmpy.KindTimeout, res.Error.Kind, res.Stderr)
}

func TestHTTPPolicyChecked(t *testing.T) {
	sb := testSandbox(t)
	_, err := sb.Run(t.Context(), httpJob("pass", hostfuncs.HTTPPolicy{Hosts: []string{"https://example.com/"}}))
	require.ErrorContains(t, err, "not a URL")
	_, err = wasmpy.New(t.Context(), wasmpy.Config{HTTP: hostfuncs.HTTPPolicy{Schemes: []string{"ftp"}}})
	require.ErrorContains(t, err, `scheme "ftp"`)
	// Granting every built-in grants no network.
	require.NotContains(t, wasmpy.Builtins(), wasmpy.HTTPRequest)
}
