package hostfuncs

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHostPatterns(t *testing.T) {
	good := map[string]struct {
		host string
		port int
		want bool
	}{
		"api.example.com":      {"api.example.com", 443, true},
		"API.Example.com.":     {"api.example.com", 80, true},
		"*.example.com":        {"a.b.example.com", 443, true},
		"*.example.com:8443":   {"x.example.com", 443, false},
		"example.com:8080":     {"example.com", 8080, true},
		"127.0.0.1:9":          {"127.0.0.1", 9, true},
		"[::1]:9":              {"::1", 9, true},
		"[::1]":                {"::1", 1, true},
		"*.example.org":        {"example.org", 443, false}, // not the apex
		"other.example.com":    {"api.example.com", 443, false},
		"[::ffff:10.0.0.1]:80": {"10.0.0.1", 80, true},
		"*.0.0.1":              {"127.0.0.1", 80, false},
	}
	for pat, c := range good {
		p, err := parseHostPattern(pat)
		require.NoError(t, err, pat)
		require.Equal(t, c.want, p.matches(c.host, c.port), pat)
	}
	for _, bad := range []string{"", "http://example.com", "*", "*.", "a.*.com", "example.com:0", "example.com:99999",
		"example.com:", "::1", "[::1", "[::1]x", "*.10.0.0.1", "user@host", "ex ample.com"} {
		_, err := parseHostPattern(bad)
		require.Error(t, err, bad)
	}
}

func TestHTTPPolicyValidate(t *testing.T) {
	require.NoError(t, HTTPPolicy{}.Validate())
	require.NoError(t, HTTPPolicy{Hosts: []string{"*.example.com:443"}, Schemes: []string{"https"}, Methods: []string{"GET"}}.Validate())
	for _, p := range []HTTPPolicy{
		{Hosts: []string{"http://x"}}, {Schemes: []string{"ftp"}}, {Methods: []string{"get"}},
		{MaxBytes: -1}, {MaxRequests: -1}, {MaxResponseBytes: -1}, {Timeout: -1},
	} {
		require.Error(t, p.Validate(), "%+v", p)
	}
}

func TestInternalAddresses(t *testing.T) {
	for _, a := range []string{"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
		"0.0.0.0", "::1", "fe80::1", "fd00::1", "::", "224.0.0.1"} {
		require.True(t, internalAddr(mustAddr(t, a)), a)
	}
	for _, a := range []string{"93.184.216.34", "2606:2800:220:1::1", "8.8.8.8"} {
		require.False(t, internalAddr(mustAddr(t, a)), a)
	}
}

// TestHTTPChecksTheResolvedAddress: a name on the list that resolves to a
// loopback address is refused when the connection is made, not on the
// name; resolution is simulated by dialing the server's address for it.
func TestHTTPChecksTheResolvedAddress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("inside")) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	get := func(hosts ...string) (json.RawMessage, error) {
		h := NewHTTP(HTTPPolicy{Hosts: hosts})
		defer h.Close()
		tr := h.client.Transport.(*http.Transport)
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, _ := net.SplitHostPort(addr)
			// "public.example" resolves to the loopback address.
			return h.dialer.DialContext(context.WithValue(ctx, dialHostKey{}, host), network, srv.Listener.Addr().String())
		}
		tbl := Table{}
		h.Register(tbl)
		return call(t, tbl, "http_request", map[string]any{"method": "GET", "url": "http://public.example:" + port + "/"})
	}
	_, err := get("public.example")
	require.Error(t, err)
	e := AsError(err)
	require.Equal(t, PermissionError, e.Type)
	require.Contains(t, e.Message, "127.0.0.1 is private, loopback or link-local")

	// Listing the address itself lets it through.
	out, err := get("public.example", "127.0.0.1:"+port)
	require.NoError(t, err)
	var ans HTTPAnswer
	require.NoError(t, json.Unmarshal(out, &ans))
	require.Equal(t, 200, ans.Status)
	require.Equal(t, "inside", string(ans.Body))
}

func TestHTTPZeroPolicyReachesNothing(t *testing.T) {
	h := NewHTTP(HTTPPolicy{})
	tbl := Table{}
	h.Register(tbl)
	_, err := call(t, tbl, "http_request", map[string]any{"url": "https://example.com/"})
	require.Error(t, err)
	require.Equal(t, PermissionError, AsError(err).Type)
	require.True(t, strings.Contains(AsError(err).Message, "allow-list, which is empty"), AsError(err).Message)
	require.Len(t, h.Records(), 1)
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	require.NoError(t, err)
	return a
}

// FuzzHTTPRequestArgs: whatever the guest sends as http_request's
// arguments, the call answers (a value or a guest exception), never
// panics, and reaches nothing off its empty allow-list.
func FuzzHTTPRequestArgs(f *testing.F) {
	f.Add([]byte(`{"method": "GET", "url": "http://127.0.0.1:1/"}`), "127.0.0.1")
	f.Add([]byte(`{"url": "http://[::1]/", "headers": [["X", "y"]], "timeout": -1}`), "[::1]:80")
	f.Add([]byte(`{"url": "//x", "headers": [[]]}`), "*.x")
	f.Fuzz(func(t *testing.T, args []byte, pattern string) {
		_ = ParseHostPattern(pattern)
		h := NewHTTP(HTTPPolicy{Hosts: []string{"allowed.invalid:1"}, Timeout: 50 * time.Millisecond})
		defer h.Close()
		tbl := Table{}
		h.Register(tbl)
		_, err := tbl["http_request"](context.Background(), args)
		if err == nil {
			t.Fatalf("a request to nowhere succeeded: %s", args)
		}
		_ = AsError(err)
	})
}
