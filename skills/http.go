package skills

import (
	"strings"
	"time"

	"github.com/wasmpy/wasmpy/hostfuncs"
	"github.com/wasmpy/wasmpy/internal/units"
)

// httpManifest is skill.yaml's http block: what a skill flagged
// network_access may reach with http_request. Its runs get it only under
// a tier that lists http_request among its capabilities (no default tier
// does).
type httpManifest struct {
	Hosts       []string `yaml:"hosts"`
	Methods     []string `yaml:"methods"`
	MaxRequests int      `yaml:"max_requests"`
	MaxBytes    string   `yaml:"max_bytes"` // a size: 1MiB
	Timeout     string   `yaml:"timeout"`   // a Go duration: 10s
}

// checkHTTP validates the http block and the network_access flag together
// into s.HTTP.
func (m *manifest) checkHTTP(s *Skill, flagged bool, fail func(string, ...any)) {
	h := m.HTTP
	switch {
	case h == nil && flagged:
		fail("safety_flags: network_access: needs an http block naming the hosts (http: {hosts: [api.example.com]})")
		return
	case h == nil:
		return
	case !flagged:
		fail("http: needs the network_access safety flag")
		return
	case len(h.Hosts) == 0:
		fail("http.hosts: missing (api.example.com, *.example.com, either with :PORT)")
	}
	p := &hostfuncs.HTTPPolicy{Hosts: h.Hosts, MaxRequests: h.MaxRequests}
	for _, meth := range h.Methods {
		p.Methods = append(p.Methods, strings.ToUpper(meth))
	}
	if h.MaxBytes != "" {
		n, err := units.ParseSize(h.MaxBytes)
		if err != nil || n == 0 || n > 1<<40 {
			fail("http.max_bytes %q: want a positive size such as 1MiB", h.MaxBytes)
		}
		p.MaxBytes = int64(n)
	}
	if h.Timeout != "" {
		d, err := time.ParseDuration(h.Timeout)
		if err != nil || d <= 0 {
			fail("http.timeout %q: want a positive duration such as 10s", h.Timeout)
		}
		p.Timeout = d
	}
	if err := p.Validate(); err != nil {
		fail("http: %s", strings.TrimPrefix(err.Error(), "wasmpy: http: "))
	}
	s.HTTP = p
}
