package hostfuncs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// http_request defaults and bounds.
const (
	DefaultHTTPMaxRequests  = 50
	DefaultHTTPMaxBytes     = 32 << 20
	DefaultHTTPMaxResponse  = 8 << 20
	DefaultHTTPTimeout      = 30 * time.Second
	maxHTTPRedirects        = 10
	maxHTTPRequestHeaders   = 100
	maxHTTPHeaderBytes      = 64 << 10
	maxHTTPResponseHeaders  = 1 << 20
	maxHTTPRecordURL        = 2048
	httpRecordURLCutMessage = "...(cut)"
)

// HTTPPolicy says what the http_request capability may reach. The zero
// value reaches nothing: every request is refused, naming the host.
type HTTPPolicy struct {
	// Hosts are the hosts requests may go to: "api.example.com" exactly,
	// "*.example.com" any name under it (not example.com itself), each
	// optionally with ":PORT" (without one, any port). A private, loopback
	// or link-local address (127.0.0.1, 10.x, 169.254.x, fd00::/8, ...) is
	// refused, whatever name led to it, unless an entry names that address
	// itself ("127.0.0.1:8080", "[::1]") or "localhost" for a loopback one.
	// The check is made on the address the name resolved to, for every
	// connection, redirects included.
	Hosts []string
	// Schemes allowed; nil: "https" and "http".
	Schemes []string
	// Methods allowed (upper case); nil: GET, HEAD, POST, PUT, PATCH,
	// DELETE, OPTIONS.
	Methods []string
	// MaxRequests bounds the requests of a run, each redirect followed
	// counting as one (0 = DefaultHTTPMaxRequests).
	MaxRequests int
	// MaxBytes bounds the request and response bodies of a run together
	// (0 = DefaultHTTPMaxBytes).
	MaxBytes int64
	// MaxResponseBytes bounds one response body (0 = DefaultHTTPMaxResponse).
	MaxResponseBytes int64
	// Timeout bounds one request, its redirects and its body (0 =
	// DefaultHTTPTimeout); the run's deadline bounds it too.
	Timeout time.Duration
}

// hostPattern is one parsed entry of HTTPPolicy.Hosts.
type hostPattern struct {
	host     string // lower case; for a wildcard, the suffix after "*."
	wildcard bool
	port     int // 0: any
	ip       netip.Addr
}

// ParseHostPattern checks one HTTPPolicy.Hosts entry.
func ParseHostPattern(s string) error {
	_, err := parseHostPattern(s)
	return err
}

func parseHostPattern(s string) (hostPattern, error) {
	var p hostPattern
	raw := strings.TrimSpace(s)
	if raw == "" {
		return p, fmt.Errorf("empty host pattern")
	}
	if strings.ContainsAny(raw, "/@?# \t") {
		return p, fmt.Errorf("host pattern %q: want HOST, *.SUFFIX or either with :PORT, not a URL", s)
	}
	host, port := raw, ""
	if strings.HasPrefix(raw, "[") { // [v6] or [v6]:port
		end := strings.Index(raw, "]")
		if end < 0 {
			return p, fmt.Errorf("host pattern %q: unclosed [", s)
		}
		host, port = raw[1:end], strings.TrimPrefix(raw[end+1:], ":")
		if raw[end+1:] != "" && !strings.HasPrefix(raw[end+1:], ":") {
			return p, fmt.Errorf("host pattern %q: junk after ]", s)
		}
	} else if i := strings.LastIndex(raw, ":"); i >= 0 {
		if strings.Count(raw, ":") > 1 {
			return p, fmt.Errorf("host pattern %q: write an IPv6 address in brackets, [::1]", s)
		}
		host, port = raw[:i], raw[i+1:]
	}
	if port != "" || strings.HasSuffix(raw, ":") {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return p, fmt.Errorf("host pattern %q: port %q is not 1-65535", s, port)
		}
		p.port = n
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if strings.HasPrefix(host, "*.") {
		p.wildcard, host = true, host[2:]
	}
	if host == "" || strings.Contains(host, "*") {
		return p, fmt.Errorf("host pattern %q: want HOST or *.SUFFIX (a * only as the first label)", s)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if p.wildcard {
			return p, fmt.Errorf("host pattern %q: a wildcard over an IP address", s)
		}
		p.ip = ip.Unmap()
		host = p.ip.String()
	}
	p.host = host
	return p, nil
}

func (p hostPattern) matches(host string, port int) bool {
	if p.port != 0 && p.port != port {
		return false
	}
	if p.wildcard {
		_, err := netip.ParseAddr(host) // a wildcard names names, not addresses
		return err != nil && strings.HasSuffix(host, "."+p.host)
	}
	return host == p.host
}

var defaultHTTPMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// Validate reports an entry of p that cannot work.
func (p HTTPPolicy) Validate() error {
	for _, h := range p.Hosts {
		if err := ParseHostPattern(h); err != nil {
			return fmt.Errorf("wasmpy: http: %w", err)
		}
	}
	for _, s := range p.Schemes {
		if s != "http" && s != "https" {
			return fmt.Errorf("wasmpy: http: scheme %q: want http or https", s)
		}
	}
	for _, m := range p.Methods {
		if m == "" || strings.ToUpper(m) != m || strings.ContainsAny(m, " \t\r\n") {
			return fmt.Errorf("wasmpy: http: method %q: want an upper-case token such as GET", m)
		}
	}
	switch {
	case p.MaxRequests < 0, p.MaxBytes < 0, p.MaxResponseBytes < 0:
		return fmt.Errorf("wasmpy: http: a negative budget")
	case p.Timeout < 0:
		return fmt.Errorf("wasmpy: http: a negative timeout")
	}
	return nil
}

// HTTPRecord is one request a run made (a redirect followed is a record of
// its own), for the run's Result.
type HTTPRecord struct {
	Method     string  `json:"method"`
	URL        string  `json:"url"`
	Status     int     `json:"status,omitempty"` // 0: no answer
	SentBytes  int64   `json:"sent_bytes"`
	RecvBytes  int64   `json:"received_bytes"`
	DurationMS float64 `json:"duration_ms"`
	Error      string  `json:"error,omitempty"` // why it failed or was refused
}

// HTTP is one run's http_request: its policy, what it has spent, and its
// record. Create it with NewHTTP; it is safe for concurrent use.
type HTTP struct {
	policy   HTTPPolicy
	patterns []hostPattern
	client   *http.Client
	dialer   *net.Dialer

	mu       sync.Mutex
	requests int
	bytes    int64
	log      []HTTPRecord
}

type dialHostKey struct{}

// NewHTTP starts a run's use of http_request under policy (which New has
// validated: an entry that does not parse is left out).
func NewHTTP(policy HTTPPolicy) *HTTP {
	h := &HTTP{policy: policy}
	if h.policy.Schemes == nil {
		h.policy.Schemes = []string{"https", "http"}
	}
	if h.policy.Methods == nil {
		h.policy.Methods = defaultHTTPMethods
	}
	if h.policy.MaxRequests == 0 {
		h.policy.MaxRequests = DefaultHTTPMaxRequests
	}
	if h.policy.MaxBytes == 0 {
		h.policy.MaxBytes = DefaultHTTPMaxBytes
	}
	if h.policy.MaxResponseBytes == 0 {
		h.policy.MaxResponseBytes = DefaultHTTPMaxResponse
	}
	if h.policy.Timeout == 0 {
		h.policy.Timeout = DefaultHTTPTimeout
	}
	for _, s := range policy.Hosts {
		if p, err := parseHostPattern(s); err == nil {
			h.patterns = append(h.patterns, p)
		}
	}
	dialer := &net.Dialer{Timeout: h.policy.Timeout, ControlContext: h.control}
	h.dialer = dialer
	transport := &http.Transport{
		Proxy: nil, // never the host's proxy settings
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, _ := net.SplitHostPort(addr)
			return dialer.DialContext(context.WithValue(ctx, dialHostKey{}, host), network, addr)
		},
		ForceAttemptHTTP2:      true,
		MaxResponseHeaderBytes: maxHTTPResponseHeaders,
		TLSHandshakeTimeout:    h.policy.Timeout,
		DisableCompression:     true, // the guest gets the bytes the server sent, as urllib does
	}
	h.client = &http.Client{Transport: transport, CheckRedirect: h.checkRedirect}
	return h
}

// errInternalAddress is a refused connection to an address off limits.
type errInternalAddress struct{ addr string }

func (e *errInternalAddress) Error() string {
	return fmt.Sprintf("the address %s is private, loopback or link-local, and not on the allow-list", e.addr)
}

// control runs for every connection, after name resolution: the address
// is what will be connected to.
func (h *HTTP) control(ctx context.Context, network, address string, _ syscall.RawConn) error {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("not an IP address: %q", host)
	}
	ip = ip.Unmap()
	if !internalAddr(ip) {
		return nil
	}
	port, _ := strconv.Atoi(portText)
	name, _ := ctx.Value(dialHostKey{}).(string)
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	for _, p := range h.patterns {
		if p.port != 0 && p.port != port {
			continue
		}
		if p.ip.IsValid() && p.ip == ip {
			return nil
		}
		if !p.wildcard && p.host == "localhost" && name == "localhost" && ip.IsLoopback() {
			return nil
		}
	}
	return &errInternalAddress{addr: ip.String()}
}

var sharedAddressSpace = netip.MustParsePrefix("100.64.0.0/10")
var thisNetwork = netip.MustParsePrefix("0.0.0.0/8")

// internalAddr reports an address that reaches the host's own machine or
// network rather than the internet.
func internalAddr(ip netip.Addr) bool {
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() ||
		sharedAddressSpace.Contains(ip) || thisNetwork.Contains(ip) ||
		(ip.Is6() && (ip.As16()[0] == 0 || ip.As16()[0]&0xfe == 0xfc)) // ::/8 (v4-compatible, NAT64 well-known aside), fc00::/7
}

// allowed checks a URL and method against the policy: the error the guest
// sees when it is not.
func (h *HTTP) allowed(method string, u *url.URL) error {
	if !slices.Contains(h.policy.Schemes, u.Scheme) {
		return Errorf(PermissionError, "http_request: scheme %q is not allowed (allowed: %s)", u.Scheme, strings.Join(h.policy.Schemes, ", "))
	}
	if !slices.Contains(h.policy.Methods, method) {
		return Errorf(PermissionError, "http_request: method %s is not allowed (allowed: %s)", method, strings.Join(h.policy.Methods, ", "))
	}
	if u.User != nil {
		return Errorf(ValueError, "http_request: credentials in the URL are not supported; send an Authorization header")
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "" {
		return Errorf(ValueError, "http_request: %q has no host", u.Redacted())
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		host = ip.Unmap().String()
	}
	port := 0
	if p := u.Port(); p != "" {
		port, _ = strconv.Atoi(p)
	} else if u.Scheme == "https" {
		port = 443
	} else {
		port = 80
	}
	for _, p := range h.patterns {
		if p.matches(host, port) {
			return nil
		}
	}
	if len(h.patterns) == 0 {
		return Errorf(PermissionError, "http_request: host %s is not on the allow-list, which is empty (grant hosts with --allow-http or HTTPPolicy.Hosts)", net.JoinHostPort(host, strconv.Itoa(port)))
	}
	return Errorf(PermissionError, "http_request: host %s is not on the allow-list (%s)", net.JoinHostPort(host, strconv.Itoa(port)), strings.Join(h.policy.Hosts, ", "))
}

// errRedirect carries a refused redirect out of the client.
type errRedirect struct{ err error }

func (e *errRedirect) Error() string { return e.err.Error() }

func (h *HTTP) checkRedirect(req *http.Request, via []*http.Request) error {
	prev := via[len(via)-1]
	// The hop just answered was a request: record it (its status is the redirect's).
	status := 0
	if req.Response != nil {
		status = req.Response.StatusCode
	}
	h.record(HTTPRecord{Method: prev.Method, URL: recordURL(prev.URL), Status: status})
	if len(via) > maxHTTPRedirects {
		return &errRedirect{Errorf(OSError, "http_request: stopped after %d redirects", maxHTTPRedirects)}
	}
	if err := h.allowed(req.Method, req.URL); err != nil {
		e := AsError(err)
		return &errRedirect{&Error{Type: e.Type, Message: "redirect to " + recordURL(req.URL) + " refused: " + strings.TrimPrefix(e.Message, "http_request: ")}}
	}
	if err := h.reserveRequest(); err != nil {
		return &errRedirect{err}
	}
	return nil
}

func (h *HTTP) reserveRequest() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.requests >= h.policy.MaxRequests {
		return Errorf(BudgetError, "http_request budget exhausted: %d requests made (redirects included), the limit is %d", h.requests, h.policy.MaxRequests)
	}
	h.requests++
	return nil
}

// spend takes n bytes from the run's byte budget.
func (h *HTTP) spend(n int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.bytes+n > h.policy.MaxBytes {
		return Errorf(BudgetError, "http_request byte budget exhausted: %d bytes used, %d more asked, the limit is %d", h.bytes, n, h.policy.MaxBytes)
	}
	h.bytes += n
	return nil
}

func (h *HTTP) remaining() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.policy.MaxBytes - h.bytes
}

func (h *HTTP) record(r HTTPRecord) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.log = append(h.log, r)
}

// Close drops the connections kept for reuse; the run's requests are over.
func (h *HTTP) Close() { h.client.CloseIdleConnections() }

// Records returns the requests made so far, in order.
func (h *HTTP) Records() []HTTPRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.log)
}

// recordURL is u without credentials, cut to a bounded length.
func recordURL(u *url.URL) string {
	s := u.Redacted()
	if len(s) > maxHTTPRecordURL {
		s = TruncateUTF8([]byte(s), maxHTTPRecordURL) + httpRecordURLCutMessage
	}
	return s
}

// HTTPArgs are http_request's arguments; the body comes as the call's raw
// data (Data), absent for none.
type HTTPArgs struct {
	Method  string      `json:"method"`
	URL     string      `json:"url"`
	Headers [][2]string `json:"headers"`
	// Timeout in seconds, within the policy's (0: the policy's).
	Timeout float64 `json:"timeout"`
}

// HTTPAnswer is what http_request returns: the final response, after the
// redirects it followed.
type HTTPAnswer struct {
	Status  int         `json:"status"`
	Reason  string      `json:"reason"`
	URL     string      `json:"url"` // after redirects
	Headers [][2]string `json:"headers"`
	Body    []byte      `json:"body"` // base64 in JSON
}

// Request makes one HTTP request under the policy.
func (h *HTTP) Request(ctx context.Context, a HTTPArgs) (*HTTPAnswer, error) {
	method := strings.ToUpper(strings.TrimSpace(a.Method))
	if method == "" {
		method = "GET"
	}
	u, err := url.Parse(a.URL)
	if err != nil || !u.IsAbs() {
		return nil, Errorf(ValueError, "http_request: %q is not an absolute URL", TruncateUTF8([]byte(a.URL), 200))
	}
	rec := HTTPRecord{Method: method, URL: recordURL(u)}
	fail := func(err error) (*HTTPAnswer, error) {
		rec.Error = AsError(err).Message
		h.record(rec)
		return nil, err
	}
	if err := h.allowed(method, u); err != nil {
		return fail(err)
	}
	if len(a.Headers) > maxHTTPRequestHeaders {
		return fail(Errorf(ValueError, "http_request: %d headers, at most %d", len(a.Headers), maxHTTPRequestHeaders))
	}
	if a.Timeout < 0 {
		return fail(Errorf(ValueError, "http_request: negative timeout %v", a.Timeout))
	}
	body, hasBody := Data(ctx)
	if err := h.reserveRequest(); err != nil {
		return fail(err)
	}
	if err := h.spend(int64(len(body))); err != nil {
		return fail(err)
	}
	rec.SentBytes = int64(len(body))
	timeout := h.policy.Timeout
	if a.Timeout > 0 && time.Duration(a.Timeout*float64(time.Second)) < timeout {
		timeout = time.Duration(a.Timeout * float64(time.Second))
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if hasBody {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return fail(Errorf(ValueError, "http_request: %v", err))
	}
	size := 0
	for _, kv := range a.Headers {
		size += len(kv[0]) + len(kv[1])
		if strings.EqualFold(kv[0], "Host") || strings.EqualFold(kv[0], "Content-Length") {
			continue // from the URL and the body
		}
		req.Header.Add(kv[0], kv[1])
	}
	if size > maxHTTPHeaderBytes {
		return fail(Errorf(ValueError, "http_request: headers of %d bytes, at most %d", size, maxHTTPHeaderBytes))
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "wasmpy")
	}
	start := time.Now()
	resp, err := h.client.Do(req)
	rec.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		return fail(h.guestError(ctx, err, timeout))
	}
	defer resp.Body.Close()
	rec.Status = resp.StatusCode
	rec.URL = recordURL(resp.Request.URL)
	limit := min(h.policy.MaxResponseBytes, h.remaining())
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	rec.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	rec.RecvBytes = int64(len(data))
	if err != nil {
		return fail(h.guestError(ctx, err, timeout))
	}
	if int64(len(data)) > limit {
		if limit < h.policy.MaxResponseBytes {
			return fail(Errorf(BudgetError, "http_request byte budget exhausted: the response body of %s is larger than the %d bytes left of %d", rec.URL, limit, h.policy.MaxBytes))
		}
		return fail(Errorf(OSError, "http_request: the response body of %s is larger than the limit of %d bytes", rec.URL, h.policy.MaxResponseBytes))
	}
	if err := h.spend(int64(len(data))); err != nil {
		return fail(err)
	}
	ans := &HTTPAnswer{Status: resp.StatusCode, Reason: strings.TrimSpace(strings.TrimPrefix(resp.Status, strconv.Itoa(resp.StatusCode))),
		URL: resp.Request.URL.String(), Body: data, Headers: [][2]string{}}
	if ans.Reason == "" {
		ans.Reason = http.StatusText(resp.StatusCode)
	}
	for _, k := range slices.Sorted(maps.Keys(resp.Header)) {
		for _, v := range resp.Header[k] {
			ans.Headers = append(ans.Headers, [2]string{k, v})
		}
	}
	h.record(rec)
	return ans, nil
}

// guestError turns a client failure into the exception the guest sees,
// without the host's own details.
func (h *HTTP) guestError(ctx context.Context, err error, timeout time.Duration) error {
	var red *errRedirect
	if errors.As(err, &red) {
		return red.err
	}
	var internal *errInternalAddress
	if errors.As(err, &internal) {
		return Errorf(PermissionError, "http_request: %v", internal)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) || ctx.Err() != nil {
		return Errorf(TimeoutError, "http_request: no answer within %v", timeout)
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return Errorf(ConnectionError, "http_request: cannot resolve %s", dnsErr.Name)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return Errorf(ConnectionError, "http_request: %s failed: %v", op.Op, op.Err)
	}
	return Errorf(ConnectionError, "http_request: %v", err)
}

// Register adds http_request to t.
func (h *HTTP) Register(t Table) {
	t.Add("http_request", Typed(h.Request))
}
