package service_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/runs"
	"github.com/wasmpy/wasmpy/service"
)

// What issue 11's review sent: each is a 4xx with a message, before
// anything runs, never a 500 or a run.
func TestRequestHygiene(t *testing.T) {
	s := startServer(t, func(c *service.Config) { c.EnableExec = true })
	host := strings.TrimPrefix(s.URL, "http://")
	echo := `{"args": {"message": "hi"}}`
	for _, tc := range []struct {
		name, path, body string
		header           []string
		status           int
		code, msg        string
	}{
		// A web page may POST text/plain cross-origin without a preflight.
		{"text/plain to execute", "/skills/echo/execute", echo, []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type", `not "text/plain"`},
		{"text/plain to exec", "/exec", `{"code": "print(1)"}`, []string{"Content-Type", "text/plain;charset=UTF-8"}, 415, "unsupported_media_type", "application/json"},
		{"form to exec", "/exec", `{"code": "print(1)"}`, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "unsupported_media_type", ""},
		{"no content type", "/skills/echo/execute", echo, []string{"Content-Type", ""}, 415, "unsupported_media_type", ""},
		{"another charset", "/skills/echo/execute", echo, []string{"Content-Type", "application/json; charset=latin1"}, 415, "unsupported_media_type", ""},
		{"JSON with its charset", "/skills/echo/execute", echo, []string{"Content-Type", "Application/JSON; charset=utf-8"}, 200, "", ""},

		{"cross-site fetch", "/exec", `{"code": "print(1)"}`, []string{"Sec-Fetch-Site", "cross-site"}, 403, "cross_origin", "cross-site"},
		{"same-site fetch", "/skills/echo/execute", echo, []string{"Sec-Fetch-Site", "same-site"}, 403, "cross_origin", ""},
		{"foreign Origin", "/skills/echo/execute", echo, []string{"Origin", "https://evil.example"}, 403, "cross_origin", "https://evil.example"},
		{"same-origin fetch", "/skills/echo/execute", echo, []string{"Sec-Fetch-Site", "same-origin", "Origin", "http://" + host}, 200, "", ""},
		{"own Origin", "/skills/echo/execute", echo, []string{"Origin", "http://" + host}, 200, "", ""},

		{"lone surrogate in args", "/skills/echo/execute", `{"args": {"message": "\ud800"}}`, nil, 400, "bad_request", `unpaired UTF-16 surrogate \ud800`},
		{"lone low surrogate in args", "/skills/echo/execute", `{"args": {"message": "a\udfffb"}}`, nil, 400, "bad_request", `\udfff`},
		{"lone surrogate in code", "/exec", `{"code": "print('\udc00')"}`, nil, 400, "bad_request", `\udc00`},
		{"lone surrogate in stdin", "/exec", `{"code": "print(1)", "stdin": "\ud83d"}`, nil, 400, "bad_request", `\ud83d`},
		{"invalid UTF-8", "/skills/echo/execute", "{\"args\": {\"message\": \"\xff\"}}", nil, 400, "bad_request", "UTF-8"},
		{"a surrogate pair", "/skills/echo/execute", `{"args": {"message": "\ud83d\ude00"}}`, nil, 200, "", ""},
		{"nested too deep", "/skills/echo/execute", `{"args": {"message": "x", "nested": ` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}}`, nil, 400, "bad_request", "nested deeper than 512"},

		{"escape in actor_id", "/skills/echo/execute", `{"args": {"message": "x"}, "actor_id": "evil\u001b]0;PWNED\u0007\u001b[2J"}`, nil, 400, "bad_request", `actor_id: only printable characters and spaces, got '\x1b' at byte 4`},
		{"newline in actor_type", "/skills/echo/execute", `{"args": {"message": "x"}, "actor_type": "agent\nFAKE LINE"}`, nil, 400, "bad_request", `actor_type: only printable`},
		{"bidi override in actor_id", "/skills/echo/execute", `{"args": {"message": "x"}, "actor_id": "abc\u202edcba"}`, nil, 400, "bad_request", `'\u202e'`},
		{"long actor_id", "/skills/echo/execute", `{"args": {"message": "x"}, "actor_id": "` + strings.Repeat("a", 257) + `"}`, nil, 400, "bad_request", "at most 256 bytes"},
		{"escape in exec actor", "/exec", `{"code": "print(1)", "actor_id": "\u001b[2J"}`, nil, 400, "bad_request", "actor_id"},
		{"printable actor", "/skills/echo/execute", `{"args": {"message": "x"}, "actor_id": "Zoë O'Brien <zoe@example.com>", "actor_type": "human user"}`, nil, 200, "", ""},

		{"fuel past the meter", "/exec", `{"code": "1", "limits": {"fuel": 18446744073709551615}}`, nil, 400, "bad_request", "limits.fuel: want 1 to 9223372036854775807"},
		{"fuel just past", "/exec", `{"code": "1", "limits": {"fuel": 9223372036854775808}}`, nil, 400, "bad_request", "limits.fuel"},
		{"fuel past uint64", "/exec", `{"code": "1", "limits": {"fuel": 18446744073709551616}}`, nil, 400, "bad_request", "fuel"},
		{"negative fuel", "/exec", `{"code": "1", "limits": {"fuel": -1}}`, nil, 400, "bad_request", "fuel"},
		{"timeout that overflows", "/exec", `{"code": "1", "limits": {"timeout_ms": 9223372036854775807}}`, nil, 400, "bad_request", "limits.timeout_ms: want 1 to 5000"},
		{"timeout that wraps to 1ms", "/exec", fmt.Sprintf(`{"code": "1", "limits": {"timeout_ms": %d}}`, uint64(1<<64-1)/1e6+1), nil, 400, "bad_request", "timeout_ms"},
		{"negative timeout", "/exec", `{"code": "1", "limits": {"timeout_ms": -1}}`, nil, 400, "bad_request", "limits.timeout_ms"},
		{"memory past wasm32", "/exec", `{"code": "1", "limits": {"memory_bytes": 18446744073709551615}}`, nil, 400, "bad_request", "limits.memory_bytes: want 1 to 67108864"},
		{"fuel within", "/exec", `{"code": "print(1)", "limits": {"fuel": 100000000}}`, nil, 200, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do(t, "POST", tc.path, tc.body, tc.header...)
			require.Equal(t, tc.status, r.status, r.raw)
			if tc.code != "" {
				require.Equal(t, tc.code, r.errorCode(), r.raw)
				require.Contains(t, r.body["error"].(map[string]any)["message"], tc.msg)
				require.Empty(t, r.header.Get("X-Execution-Id"), "refused before running")
			}
		})
	}
}

// Without exec ceilings, a request's limits are still bounded by its tier's
// (testing's, the default: 20 s, 256 MiB) and, where the tier sets none
// (fuel), by what wasmpy can enforce.
func TestExecLimitsWithoutCeilings(t *testing.T) {
	s := startServer(t, func(c *service.Config) { c.EnableExec = true; c.ExecLimits.Timeout, c.ExecLimits.Memory = 0, 0 })
	for body, msg := range map[string]string{
		`{"code": "1", "limits": {"fuel": 18446744073709551615}}`:      "limits.fuel: want 1 to 9223372036854775807",
		`{"code": "1", "limits": {"memory_bytes": 4294967297}}`:        "limits.memory_bytes: want 1 to 268435456",
		`{"code": "1", "limits": {"timeout_ms": 9223372036854775807}}`: "limits.timeout_ms: want 1 to 20000: tier testing's timeout (or 0 for the default)",
	} {
		r := s.do(t, "POST", "/exec", body)
		require.Equal(t, 400, r.status, r.raw)
		require.Contains(t, r.raw, msg)
	}
	ex, reg, _ := fixtures(t)
	_, err := service.New(service.Config{Registry: reg, Executor: ex, ExecLimits: wasmpy.Limits{Fuel: 1 << 63}})
	require.ErrorContains(t, err, "service: ExecLimits: wasmpy: fuel limit 9223372036854775808 exceeds 9223372036854775807")
	_, err = runs.NewAdmission(runs.AdmissionConfig{MaxConcurrent: 1 << 62})
	require.ErrorContains(t, err, "MaxConcurrent")
}
