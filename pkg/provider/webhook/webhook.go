package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/net/http/httpguts"
	"golang.org/x/sync/singleflight"
	"k8s.io/utils/clock"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// MediaType is the webhook protocol's media type and version: the Accept and Content-Type of
// every request, and the Content-Type the negotiation must answer (external-dns
// provider/webhook/api.MediaTypeFormatAndVersion).
const MediaType = "application/external.dns.webhook+json;version=1"

// Paths of the protocol, below Config.URL.
const (
	pathNegotiate = "/"
	pathRecords   = "/records"
	pathAdjust    = "/adjustendpoints"
)

// MaxBody caps every request and response body, in bytes: 32 MiB, the webhook protocol's limit.
const MaxBody = 32 << 20

// Defaults of Config.
const (
	// DefaultTimeout bounds each request when Config.Timeout is 0.
	DefaultTimeout = 30 * time.Second
	// DefaultBatchSize is Config.BatchSize when 0: the most record-set changes one POST /records
	// carries. Webhooks declare no limit, and external-dns's own client sends a whole sync's plan
	// in one POST /records, so webhooks are built to take large documents; 1,000 changes (about
	// 170 KiB of JSON for A records) keeps a request far under MaxBody while a first sync of a
	// zone of a few hundred names costs one write, not several. Lower it for a webhook that
	// forwards a document to an API with a smaller per-request limit as one call.
	DefaultBatchSize = 1000
	// DefaultFilterMaxAge is Config.FilterMaxAge when 0: how long a negotiated domain filter is
	// reused before GET / is sent again.
	DefaultFilterMaxAge = 30 * time.Second
	// DefaultAdjustCacheSize is Config.AdjustCacheSize when 0: how many answers of
	// /adjustendpoints, one per endpoint sent, are remembered.
	DefaultAdjustCacheSize = 4096
)

// bodyMargin is what MaxValueBytesPerBatch leaves of MaxBody for the JSON around the endpoints
// (RequestCost counts the endpoints' JSON only).
const bodyMargin = 1 << 20

// reserved reports whether name is a header the protocol sets itself, which Config.Headers
// cannot replace.
func reserved(name string) bool {
	switch http.CanonicalHeaderKey(name) {
	case "Accept", "Content-Type", "Content-Length", "Host", "Transfer-Encoding", "Connection":
		return true
	}
	return false
}

// Config configures a Provider.
type Config struct {
	// URL is the webhook's root, an http or https URL without user info, query or fragment,
	// e.g. "http://127.0.0.1:8888" (a sidecar) or "http://dns-webhook.dns-system.svc:8888". The
	// protocol's paths are joined below its path. Required. Secret key WEBHOOK_URL.
	URL string
	// Headers are sent with every request, e.g. an Authorization header for a webhook behind an
	// authenticating proxy. Their values are credentials: never logged or returned. The
	// protocol's own headers (Accept, Content-Type, ...) cannot be set. Secret key
	// WEBHOOK_HEADERS.
	Headers http.Header
	// HTTPClient sends every request; default a new http.Client (requests are bounded by Timeout
	// and the caller's context). The provider uses a copy whose CheckRedirect follows no
	// redirect: a webhook answers at WEBHOOK_URL itself, and a redirect would carry Headers to
	// another address and turn a write into a read.
	HTTPClient *http.Client
	// Timeout bounds each request, reply body included; default DefaultTimeout.
	Timeout time.Duration
	// BatchSize is the most record-set changes one POST /records carries
	// (Capabilities().MaxChangesPerBatch); default DefaultBatchSize. Secret key
	// WEBHOOK_BATCH_SIZE.
	BatchSize int
	// FilterMaxAge is how long the domain filter of a negotiation (GET /) is reused, a
	// time.Duration; 0 = DefaultFilterMaxAge, negative = negotiate before every call that needs
	// the filter.
	FilterMaxAge time.Duration
	// Clock reads the time for FilterMaxAge; nil = the real clock.
	Clock clock.PassiveClock
	// AdjustCacheSize is how many /adjustendpoints answers (one endpoint in, the webhook's
	// endpoint out) are remembered, within AdjustCacheBytes, so that an update to a set the webhook already holds as it
	// would adjust it costs no request at all; 0 = DefaultAdjustCacheSize, negative = none. A
	// webhook's adjustment is taken to depend on the endpoint alone, as external-dns's own
	// AdjustEndpoints does. When full the cache starts again empty.
	AdjustCacheSize int
	// Metrics, when set, count every HTTP request (dnsplane_webhook_requests_total); several
	// providers may share one.
	Metrics *Metrics
}

// Provider implements provider.Provider over a webhook. It is safe for concurrent use.
type Provider struct {
	base      *url.URL
	headers   http.Header
	secrets   []string // what redact looks for (secrets of headers)
	client    *http.Client
	timeout   time.Duration
	batch     int
	filterAge time.Duration
	clock     clock.PassiveClock

	mu       sync.Mutex
	filter   *DomainFilter // the last negotiated filter; nil before the first
	filterAt time.Time

	// shared lets concurrent negotiations, and concurrent GET /records of zone reads, share
	// one request: the 10 DNSZones of one webhook adopted at once cost one of each, not ten.
	// A listing is shared only among callers of one write generation (writes): a read that
	// began before a POST /records was sent, or before it was answered, is not handed to a
	// caller that came after.
	shared singleflight.Group
	writes atomic.Uint64

	// adjusted remembers /adjustendpoints answers by the JSON of the endpoint sent (see
	// Config.AdjustCacheSize); guarded by mu.
	adjusted      map[string]Endpoint
	adjustedSize  int
	adjustedBytes int // the bytes adjusted holds (rememberAdjustment); guarded by mu

	// unsureZones are the zones whose last POST /records may or may not have been applied
	// (unsure); guarded by mu.
	unsureZones map[string]bool

	metrics *Metrics
}

var (
	_ provider.Provider     = (*Provider)(nil)
	_ provider.ZoneReader   = (*Provider)(nil)
	_ provider.RequestSizer = (*Provider)(nil)
)

// New validates cfg and returns a provider. It does no I/O. A missing or malformed URL or header
// gives an error wrapping provider.ErrInvalidCredentials that names the problem, never a header
// value.
func New(cfg Config) (*Provider, error) {
	u, err := provider.ParseAPIURL("WEBHOOK_URL", cfg.URL, "http://127.0.0.1:8888")
	if err != nil {
		return nil, fmt.Errorf("%w (send credentials as WEBHOOK_HEADERS)", err)
	}
	headers := http.Header{}
	for name, values := range cfg.Headers {
		if !httpguts.ValidHeaderFieldName(name) {
			return nil, fmt.Errorf("%w: header name %q is not a valid HTTP field name", provider.ErrInvalidCredentials, name)
		}
		if reserved(name) {
			return nil, fmt.Errorf("%w: header %s is set by the webhook protocol and cannot be configured", provider.ErrInvalidCredentials, http.CanonicalHeaderKey(name))
		}
		for _, v := range values {
			if !httpguts.ValidHeaderFieldValue(v) {
				return nil, fmt.Errorf("%w: the value of header %s is not a valid HTTP field value", provider.ErrInvalidCredentials, http.CanonicalHeaderKey(name))
			}
			headers.Add(name, v)
		}
	}
	if cfg.BatchSize < 0 {
		return nil, fmt.Errorf("%w: the batch size must be >= 1", provider.ErrInvalidCredentials)
	}
	p := &Provider{
		base:      u,
		headers:   headers,
		secrets:   secrets(headers),
		timeout:   cfg.Timeout,
		batch:     cfg.BatchSize,
		filterAge: cfg.FilterMaxAge,
		clock:     cfg.Clock,

		adjustedSize: cfg.AdjustCacheSize,
		metrics:      cfg.Metrics,
	}
	if p.adjustedSize == 0 {
		p.adjustedSize = DefaultAdjustCacheSize
	}
	p.client = noRedirects(cfg.HTTPClient)
	if p.timeout <= 0 {
		p.timeout = DefaultTimeout
	}
	if p.batch == 0 {
		p.batch = DefaultBatchSize
	}
	if p.filterAge == 0 {
		p.filterAge = DefaultFilterMaxAge
	}
	if p.clock == nil {
		p.clock = clock.RealClock{}
	}
	return p, nil
}

// Capabilities: batches of Config.BatchSize changes per POST /records (RequestCost counts one
// per change) whose endpoints' JSON stays under MaxBody; one write in flight, as external-dns
// itself never overlaps two ApplyChanges calls and webhooks are written for that; no conditional
// writes, weighted routing or zone creation: the protocol has none of them.
func (p *Provider) Capabilities() provider.Capabilities {
	return provider.Capabilities{
		BatchWrites:           true,
		MaxChangesPerBatch:    p.batch,
		MaxValueBytesPerBatch: MaxBody - bodyMargin,
		ConditionalWrites:     false,
		WeightedRouting:       false,
		CreateZones:           false,
		MaxWritesInFlight:     1,
	}
}

// RequestCost implements provider.RequestSizer: one change against MaxChangesPerBatch, and the
// bytes of the JSON of its endpoints (After for a Create, Before for a Delete, both for an
// Update, as POST /records carries them) against MaxValueBytesPerBatch. The endpoints that
// /adjustendpoints returns may differ a little; bodyMargin covers that.
func (p *Provider) RequestCost(ch provider.Change) (elements, valueBytes int) {
	var sides []*provider.RecordSet
	switch ch.Action {
	case provider.ActionCreate:
		sides = []*provider.RecordSet{ch.After}
	case provider.ActionDelete:
		sides = []*provider.RecordSet{ch.Before}
	default:
		sides = []*provider.RecordSet{ch.Before, ch.After}
	}
	for _, rs := range sides {
		if rs == nil {
			continue
		}
		if b, err := json.Marshal(ToEndpoint(*rs)); err == nil {
			valueBytes += len(b) + 1 // and a comma
		}
	}
	return 1, valueBytes
}

// StatusError is a webhook's answer with a status other than the protocol's (conforming). Its
// text is the webhook's for a 4xx or 5xx (a JSON "error" or "message" field, or the body, at most
// 512 bytes, with configured header values redacted), and what the protocol requires for any
// other status; never a header of the answer (a redirect's Location is not shown).
type StatusError struct {
	Method, Path string
	Code         int
	Text         string
}

// Error implements error.
func (e *StatusError) Error() string {
	msg := fmt.Sprintf("webhook %s %s: HTTP %d", e.Method, e.Path, e.Code)
	if e.Text != "" {
		msg += ": " + e.Text
	}
	return msg
}

// do sends one request under the provider's timeout: in (when not nil) as the JSON body, and a
// conforming answer's JSON decoded into out (when not nil). check, when set, checks a conforming
// answer's headers first. Any other answer is an error (statusError). Errors name the method and
// path, never a header value.
func (p *Provider) do(ctx context.Context, method, path string, in, out any, check func(http.Header) error) error {
	return p.scrub(p.send(ctx, method, path, in, out, check))
}

// requestBody encodes in as a request body: nil for a nil in. Errors: in does not encode, or
// encodes to more than MaxBody bytes (provider.ErrInvalidChange).
func requestBody(method, path string, in any) (io.Reader, error) {
	if in == nil {
		return nil, nil
	}
	b, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("webhook %s %s: encode: %w", method, path, err)
	}
	if len(b) > MaxBody {
		return nil, fmt.Errorf("webhook %s %s: %w: the request body is %d bytes, over the protocol's %d (lower WEBHOOK_BATCH_SIZE)", method, path, provider.ErrInvalidChange, len(b), MaxBody)
	}
	return bytes.NewReader(b), nil
}

// send is do without scrub. Reading the answer is bounded by the same timeout: the body is
// closed when the request's context ends, whatever the answer (a 101's body is the bare
// connection, which no context watches), and a 1xx answer's body is never read (it has none).
func (p *Provider) send(ctx context.Context, method, path string, in, out any, check func(http.Header) error) error {
	body, err := requestBody(method, path, in)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, p.base.JoinPath(path).String(), body)
	if err != nil {
		return fmt.Errorf("webhook %s %s: %w", method, path, err)
	}
	for name, values := range p.headers {
		req.Header[name] = slices.Clone(values)
	}
	req.Header.Set("Accept", MediaType)
	if in != nil {
		req.Header.Set("Content-Type", MediaType)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		p.metrics.observe(method, path, 0)
		// *url.Error carries the URL, which holds no credential (New refuses user info).
		return fmt.Errorf("webhook %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	defer context.AfterFunc(ctx, func() { _ = resp.Body.Close() })()
	p.metrics.observe(method, path, resp.StatusCode)
	if resp.StatusCode < 200 {
		return p.statusError(method, path, resp, nil)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return fmt.Errorf("webhook %s %s: read response: %w", method, path, err)
	}
	if len(data) > MaxBody {
		return fmt.Errorf("webhook %s %s: the response is over the protocol's %d bytes", method, path, MaxBody)
	}
	if !conforming(method, path, resp.StatusCode) {
		return p.statusError(method, path, resp, data)
	}
	if check != nil {
		if err := check(resp.Header); err != nil {
			return fmt.Errorf("webhook %s %s: %w", method, path, err)
		}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("webhook %s %s: decode response: %w", method, path, err)
		}
	}
	return nil
}

// noRedirects returns a copy of c (a new client when nil) that follows no redirect: Do returns a
// 3xx answer as it came, which conforming refuses.
func noRedirects(c *http.Client) *http.Client {
	out := &http.Client{}
	if c != nil {
		*out = *c
	}
	out.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return out
}

// wantStatus is the status of a conforming answer to method path, as external-dns's webhook
// client (provider/webhook/webhook.go) requires it: 204 for POST /records (ApplyChanges), 200 for
// GET /records (Records) and POST /adjustendpoints (AdjustEndpoints); 0 for the negotiation, which
// takes any 2xx (requestWithRetry).
func wantStatus(method, path string) int {
	switch {
	case method == http.MethodPost && path == pathRecords:
		return http.StatusNoContent
	case path == pathNegotiate:
		return 0
	default:
		return http.StatusOK
	}
}

// conforming reports whether code is the protocol's answer to method path (wantStatus).
func conforming(method, path string, code int) bool {
	if want := wantStatus(method, path); want != 0 {
		return code == want
	}
	return code >= 200 && code <= 299
}

// retryable reports whether external-dns's client retries a call to path answered code: the
// negotiation every 5xx (requestWithRetry), the other calls 500 to 510 (isRetryableError).
func retryable(path string, code int) bool {
	if path == pathNegotiate {
		return code >= 500 && code <= 599
	}
	return code >= 500 && code <= 510
}

// statusError maps an answer that is not conforming onto provider's typed errors, retrying as
// external-dns's webhook client does (retryable): a retryable status is provider.ErrUnavailable,
// which the guard retries, or a ThrottledError for a 503 with Retry-After; 429 is a
// ThrottledError too; 401 and 403 are provider.ErrInvalidCredentials (the headers are the
// credentials); another 4xx answers a write (POST) with provider.ErrInvalidChange, a read with the
// StatusError alone; any other status (a 5xx from 511 up, a redirect, a 2xx other than the
// protocol's) is the StatusError alone. Only the first two are retried.
func (p *Provider) statusError(method, path string, resp *http.Response, data []byte) error {
	code := resp.StatusCode
	se := &StatusError{Method: method, Path: path, Code: code, Text: p.errorText(data)}
	if code < 400 {
		se.Text = nonConforming(method, path, code)
	}
	wait := retryAfter(resp.Header.Get("Retry-After"), p.clock.Now())
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return fmt.Errorf("%w: %w", provider.ErrInvalidCredentials, se)
	case code == http.StatusTooManyRequests, code == http.StatusServiceUnavailable && wait > 0:
		return &provider.ThrottledError{RetryAfter: wait, Err: se}
	case retryable(path, code):
		return fmt.Errorf("%w: %w", provider.ErrUnavailable, se)
	case code >= 400 && code <= 499 && method == http.MethodPost:
		return fmt.Errorf("%w: %w", provider.ErrInvalidChange, se)
	}
	return se
}

// nonConforming says what is wrong with a 1xx, 2xx or 3xx answer that is not the protocol's.
func nonConforming(method, path string, code int) string {
	want := "a 2xx"
	if w := wantStatus(method, path); w != 0 {
		want = strconv.Itoa(w)
	}
	if code >= 300 {
		return fmt.Sprintf("a redirect, which is not followed: the protocol answers %s (WEBHOOK_URL must be the webhook's own address, not one that redirects)", want)
	}
	if method == http.MethodPost && path == pathRecords {
		return "the protocol acknowledges a write with 204 only, so this write is not taken as done (is WEBHOOK_URL the webhook itself, not a proxy's login page?)"
	}
	return fmt.Sprintf("the protocol answers %s", want)
}

// errorText is a JSON body's "error" or "message", or the trimmed body, with every configured
// header value redacted (before the cut, so that no part of one is left), control characters as
// spaces, and at most 512 bytes.
func (p *Provider) errorText(data []byte) string {
	var e struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	s := string(data)
	if json.Unmarshal(data, &e) == nil {
		if e.Error != "" {
			s = e.Error
		} else if e.Message != "" {
			s = e.Message
		}
	}
	s = strings.TrimSpace(strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, p.redact(s)))
	if len(s) > 512 {
		s = s[:512] + "..."
	}
	return s
}

// minSecretPart is the shortest word of a header value that redact looks for on its own: shorter
// words ("Bearer", "Basic") are auth schemes, not secrets.
const minSecretPart = 8

// secrets returns what redact looks for: each configured header value (trimmed, at least 4
// bytes), each of its words of at least minSecretPart bytes (a token without its "Bearer "
// scheme), and each of those as a JSON string spells it (a webhook echoing its request as JSON
// escapes '<', '>' and '&'), longest first so that a whole value goes before its parts.
func secrets(headers http.Header) []string {
	var out []string
	add := func(v string) {
		if v == "" || slices.Contains(out, v) {
			return
		}
		out = append(out, v)
		if b, err := json.Marshal(v); err == nil {
			if q := string(b[1 : len(b)-1]); q != v && !slices.Contains(out, q) {
				out = append(out, q)
			}
		}
	}
	for _, values := range headers {
		for _, v := range values {
			if v = strings.TrimSpace(v); len(v) < 4 {
				continue
			}
			add(v)
			for _, w := range strings.Fields(v) {
				if len(w) >= minSecretPart {
					add(w)
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// redact replaces every configured header value, and every part of one secrets names, in s,
// should a webhook echo one.
func (p *Provider) redact(s string) string {
	for _, v := range p.secrets {
		s = strings.ReplaceAll(s, v, "[redacted]")
	}
	return s
}

// scrubbed is an error whose text had a configured header value in it: Error is that text
// redacted; Unwrap keeps errors.Is and errors.As working.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// scrub returns err, or when its text shows a configured header value (an HTTP client error
// quoting a hostile answer, a header or a negotiation body echoing one) an error of the same
// chain whose text has it redacted.
func (p *Provider) scrub(err error) error {
	if err == nil {
		return nil
	}
	if msg := err.Error(); p.redact(msg) != msg {
		return &scrubbed{msg: p.redact(msg), err: err}
	}
	return err
}

func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(h); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// checkMediaType is the negotiation's check: the answer's Content-Type is MediaType (its
// parameters compared as parameters, so spacing and case do not matter).
func checkMediaType(h http.Header) error {
	got := h.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(got)
	if err != nil || mt != "application/external.dns.webhook+json" || params["version"] != "1" {
		return fmt.Errorf("negotiation answered Content-Type %q, want %q (is WEBHOOK_URL an external-dns webhook of protocol version 1?)", got, MediaType)
	}
	return nil
}

// Negotiate sends GET / and returns the webhook's domain filter, which the provider then reuses
// for Config.FilterMaxAge. A wrong media type, or a body that is no domain filter, is an error.
func (p *Provider) Negotiate(ctx context.Context) (DomainFilter, error) {
	v, err := p.share(ctx, "negotiate", func(ctx context.Context) (any, error) {
		var raw json.RawMessage
		err := p.do(ctx, http.MethodGet, pathNegotiate, nil, &raw, checkMediaType)
		return raw, err
	})
	if err != nil {
		return DomainFilter{}, fmt.Errorf("negotiate: %w", err)
	}
	raw := v.(json.RawMessage)
	f, err := ParseDomainFilter(raw)
	if err != nil {
		return DomainFilter{}, p.scrub(fmt.Errorf("negotiate: webhook GET /: %w", err))
	}
	p.mu.Lock()
	p.filter, p.filterAt = &f, p.clock.Now()
	p.mu.Unlock()
	return f, nil
}

// domainFilter returns the last negotiated filter while it is at most Config.FilterMaxAge old
// (cached true), else negotiates.
func (p *Provider) domainFilter(ctx context.Context) (f DomainFilter, cached bool, err error) {
	p.mu.Lock()
	last, at := p.filter, p.filterAt
	p.mu.Unlock()
	if last != nil && p.filterAge > 0 && p.clock.Since(at) < p.filterAge {
		return *last, true, nil
	}
	f, err = p.Negotiate(ctx)
	return f, false, err
}

// zone returns the canonical zone name of id, which the webhook's filter must match, or an error
// wrapping provider.ErrZoneNotFound; a name the cached filter does not match is checked against
// a fresh negotiation first.
func (p *Provider) zone(ctx context.Context, id string) (string, DomainFilter, error) {
	name, f, _, err := p.zoneFilter(ctx, id)
	return name, f, err
}

// zoneFilter is zone, and whether the filter is a remembered one (not negotiated by this call).
func (p *Provider) zoneFilter(ctx context.Context, id string) (string, DomainFilter, bool, error) {
	name, err := provider.ValidateName(id)
	if err != nil || strings.HasPrefix(name, "*") {
		return "", DomainFilter{}, false, fmt.Errorf("zone %q: %w: a webhook zone's ID is its name", id, provider.ErrZoneNotFound)
	}
	f, cached, err := p.domainFilter(ctx)
	if err != nil {
		return "", DomainFilter{}, false, err
	}
	if !f.Match(name) && cached {
		// The webhook may serve a zone created since the filter was read (PowerDNS's
		// provider answers its current zones): ask again before answering "not found".
		if f, err = p.Negotiate(ctx); err != nil {
			return "", DomainFilter{}, false, err
		}
		cached = false
	}
	if !f.Match(name) {
		return "", DomainFilter{}, false, fmt.Errorf("zone %s: %w: the webhook's domain filter does not match it", name, provider.ErrZoneNotFound)
	}
	return name, f, cached, nil
}

// EnsureZone returns provider.ErrNotCapable: the webhook protocol cannot create zones. A DNSZone
// adopts a webhook zone with spec.zoneID set to the zone's name (a name the webhook's domain
// filter matches).
func (p *Provider) EnsureZone(_ context.Context, spec provider.ZoneSpec) (provider.Zone, error) {
	return provider.Zone{}, fmt.Errorf("ensure zone %s: %w: an external-dns webhook cannot create zones; adopt the zone by setting spec.zoneID to its name", dnswire.Dotless(spec.Name), provider.ErrNotCapable)
}

// DeleteZone returns provider.ErrNotCapable: the protocol cannot delete zones, and adopted zones
// are never deleted (nor emptied) by dnsplane.
func (p *Provider) DeleteZone(_ context.Context, id string) error {
	return fmt.Errorf("delete zone %s: %w: an external-dns webhook cannot delete zones", dnswire.Dotless(id), provider.ErrNotCapable)
}

// ListZones returns the zones the webhook's domain filter names (DomainFilter.Zones), from the
// negotiation alone: IDs are names, and NameServers are left empty (GetZone reads them). A
// filter of regular expressions, or an empty one, names none.
func (p *Provider) ListZones(ctx context.Context) ([]provider.Zone, error) {
	f, _, err := p.domainFilter(ctx)
	if err != nil {
		return nil, fmt.Errorf("list zones: %w", err)
	}
	names := f.Zones()
	out := make([]provider.Zone, 0, len(names))
	for _, n := range names {
		out = append(out, provider.Zone{ID: n, Name: n})
	}
	return out, nil
}

// GetZone returns the zone named id when the webhook's domain filter matches it, with the
// targets of its apex NS set as NameServers (one GET /records, as ReadZone); else an error
// wrapping provider.ErrZoneNotFound.
func (p *Provider) GetZone(ctx context.Context, id string) (provider.Zone, error) {
	z, _, err := p.ReadZone(ctx, id)
	if err != nil {
		return provider.Zone{}, err
	}
	return z, nil
}

// ReadZone implements provider.ZoneReader: the zone as GetZone gives it and its record sets as
// ListRecordSets gives them, from one GET /records (and a negotiation when the filter is older
// than Config.FilterMaxAge).
func (p *Provider) ReadZone(ctx context.Context, id string) (provider.Zone, []provider.RecordSet, error) {
	name, f, err := p.zone(ctx, id)
	if err != nil {
		return provider.Zone{}, nil, fmt.Errorf("read zone: %w", err)
	}
	sets, err := p.sharedRecords(ctx, name, f)
	if err != nil {
		return provider.Zone{}, nil, fmt.Errorf("read zone %s: %w", name, err)
	}
	z := provider.Zone{ID: name, Name: name}
	for _, rs := range sets {
		if rs.Name == name && rs.Type == "NS" && rs.SetIdentifier == "" {
			z.NameServers = slices.Clone(rs.Targets)
		}
	}
	return z, sets, nil
}

// ListRecordSets returns the zone's record sets: the endpoints of GET /records that the domain
// filter matches (DomainFilter.Match) and that belong to it (DomainFilter.Holds), canonical (FromEndpoint), in the webhook's order; of endpoints with one
// key (a webhook listing the delegation NS from both of its zones) the first. Unknown zone:
// provider.ErrZoneNotFound.
func (p *Provider) ListRecordSets(ctx context.Context, zoneID string) ([]provider.RecordSet, error) {
	name, f, err := p.zone(ctx, zoneID)
	if err != nil {
		return nil, fmt.Errorf("list record sets: %w", err)
	}
	sets, err := p.sharedRecords(ctx, name, f)
	if err != nil {
		return nil, fmt.Errorf("list record sets of %s: %w", name, err)
	}
	return sets, nil
}

// records reads GET /records and keeps zone's sets, never nil.
func (p *Provider) records(ctx context.Context, zone string, f DomainFilter) ([]provider.RecordSet, error) {
	return p.recordsOf(ctx, zone, f, false)
}

// share runs fn once for the concurrent callers of key (Provider.shared) and returns its result,
// or ctx's error when ctx ends first. fn gets a context without the first caller's
// cancellation, since the others wait on it too; p.do still bounds it with Config.Timeout.
func (p *Provider) share(ctx context.Context, key string, fn func(context.Context) (any, error)) (any, error) {
	ch := p.shared.DoChan(key, func() (any, error) { return fn(context.WithoutCancel(ctx)) })
	select {
	case r := <-ch:
		return r.Val, r.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// sharedRecords is records from a GET /records that concurrent callers of one write generation
// share (Provider.shared): for zone reads, not for the read of a read-merge-write.
func (p *Provider) sharedRecords(ctx context.Context, zone string, f DomainFilter) ([]provider.RecordSet, error) {
	return p.recordsOf(ctx, zone, f, true)
}

// recordsOf reads GET /records, alone or shared, and keeps zone's sets, never nil. The
// endpoints of a shared read are only read here (FromEndpoint copies what it keeps).
func (p *Provider) recordsOf(ctx context.Context, zone string, f DomainFilter, shared bool) ([]provider.RecordSet, error) {
	var eps endpointList
	if shared {
		v, err := p.share(ctx, "records/"+strconv.FormatUint(p.writes.Load(), 10), func(ctx context.Context) (any, error) {
			var eps endpointList
			err := p.do(ctx, http.MethodGet, pathRecords, nil, &eps, nil)
			return eps, err
		})
		if err != nil {
			return nil, err
		}
		eps = v.(endpointList)
	} else if err := p.do(ctx, http.MethodGet, pathRecords, nil, &eps, nil); err != nil {
		return nil, err
	}
	out := make([]provider.RecordSet, 0, len(eps))
	seen := map[provider.RecordSetKey]bool{}
	zones := f.Zones()
	for _, ep := range eps {
		if !f.Match(ep.DNSName) {
			continue // external-dns's plan never reads it: not the webhook's to manage
		}
		rs, ok := FromEndpoint(ep)
		// The name as read (canonical: spaces trimmed) must match too, whatever the spelling.
		if !ok || !f.Match(rs.Name) || !holds(zones, zone, rs.Name, rs.Type) || seen[rs.Key()] {
			continue
		}
		seen[rs.Key()] = true
		out = append(out, rs)
	}
	return out, nil
}

// ApplyChanges writes changes as one POST /records (the guard splits by Capabilities first):
//  1. every change is validated before anything is sent (provider.ErrInvalidChange; a weighted
//     set, or one with a set identifier, provider.ErrNotCapable; a name inside a deeper zone of
//     the webhook's filter, or the SOA, ErrInvalidChange);
//  2. changes to one key collapse into one, with the same end state (a Create then an Update is
//     a Create of the last After; a Delete then a Create an Update; a Create then a Delete
//     nothing), since a webhook applies a document's lists in its own order and external-dns's
//     in-memory provider refuses a key twice in one document;
//  3. the After sets (Creates and Updates) are sent to POST /adjustendpoints, and what the
//     webhook answers for each key is what is written, so that the webhook's normalisation
//     (TTL defaults, provider-specific defaults) is what dnsplane reads back and compares with
//     at its next plan; a set the answer leaves out gives provider.ErrNotCapable and nothing is
//     written. An Update whose adjusted After equals its Before is dropped: the webhook holds
//     the set as it would hold the After, so the plan, which compares dnsplane's spelling with
//     the webhook's (a TTL the webhook raised to its minimum, a provider-specific default it
//     added), costs no write; answers are remembered (Config.AdjustCacheSize), so that the same
//     comparison after the next read of the zone costs no request either;
//  4. the protocol has no conditional write, so shared changes (provider.Change.Shared: DNSRecord
//     sets, which other writers change too) are applied by read-merge-write: one GET /records
//     just before the write, and each such change becomes its delta of targets (added: After's
//     not in Before; removed: Before's not in After) applied onto the set as read, so that a
//     target another writer added meanwhile is kept (see mergeShared). Registry records,
//     single-valued types (CNAME, DNAME) and unshared changes are written as they come. A
//     concurrent read-merge-write of the same set between that read and this write can still
//     drop a target; DNSRecord's self-heal restores it (dnsplane API contract, "Lost targets
//     heal themselves");
//  5. when the filter of step 1 was a remembered one (Config.FilterMaxAge), the webhook is asked
//     for its filter again (GET /) and every set of the write is checked against it, so that a
//     name the webhook came to exclude meanwhile is never written (ErrInvalidChange);
//  6. after a POST /records to the zone that ended without a verdict (a 500 to 510, a timeout,
//     a reset: it may or may not have been applied), the next write, such as the guard's retry,
//     reads the zone first and leaves out the changes it shows done (dropApplied), so that a
//     webhook whose create is not idempotent does not apply them twice;
//  7. POST /records carries the Creates as create, the Updates' Before and adjusted After as
//     updateOld and updateNew, and the Deletes' Before as delete.
//
// Unknown zone: provider.ErrZoneNotFound. HTTP statuses map as the package doc says; a 5xx may or
// may not have applied the document (the webhook's own provider decides).
func (p *Provider) ApplyChanges(ctx context.Context, zoneID string, changes []provider.Change) error {
	zone, f, cached, err := p.zoneFilter(ctx, zoneID)
	if err != nil {
		return fmt.Errorf("apply changes: %w", err)
	}
	canon, err := provider.PrepareChanges(zone, changes, func(action provider.Action, which string, rs provider.RecordSet) (provider.RecordSet, error) {
		return checkSet(zone, f, action, which, rs)
	}, func(ch provider.Change) (provider.Change, error) { return ch, nil })
	if err != nil {
		return err
	}
	merged := coalesce(canon)
	if slices.ContainsFunc(merged, readMerged) {
		if merged, err = p.mergeShared(ctx, zone, f, merged); err != nil {
			return fmt.Errorf("apply changes to %s: %w", zone, err)
		}
	}
	if len(merged) == 0 {
		return nil
	}
	adjusted, err := p.adjust(ctx, merged)
	if err != nil {
		return fmt.Errorf("apply changes to %s: %w", zone, err)
	}
	held := 0
	merged = slices.DeleteFunc(merged, func(ch provider.Change) bool {
		if ch.Action != provider.ActionUpdate {
			return false
		}
		after, ok := FromEndpoint(adjusted[ch.After.Key()])
		if ok && after.Equal(*ch.Before) {
			held++
			return true
		}
		return false
	})
	if len(merged) == 0 {
		logr.FromContextOrDiscard(ctx).V(1).Info("webhook write skipped: the webhook holds every set as it would adjust it", "zone", zone, "held", held)
		return nil
	}
	if p.unsure(zone) {
		if merged, err = p.dropApplied(ctx, zone, f, merged, adjusted); err != nil {
			return fmt.Errorf("apply changes to %s: %w", zone, err)
		}
		if len(merged) == 0 {
			p.setUnsure(zone, false)
			return nil
		}
	}
	if cached {
		if err := p.recheck(ctx, zone, merged); err != nil {
			return fmt.Errorf("apply changes to %s: %w", zone, err)
		}
	}
	doc := document(merged, adjusted)
	logr.FromContextOrDiscard(ctx).V(1).Info("webhook write", "zone", zone,
		"create", len(doc.Create), "update", len(doc.UpdateNew), "delete", len(doc.Delete), "held", held)
	p.writes.Add(1)
	defer p.writes.Add(1)
	if err := p.do(ctx, http.MethodPost, pathRecords, doc, nil, nil); err != nil {
		// A 5xx, a timeout or a reset may or may not have applied the document.
		p.setUnsure(zone, provider.Unreachable(err))
		return fmt.Errorf("apply changes to %s: %w", zone, err)
	}
	p.setUnsure(zone, false)
	return nil
}

// document is the POST /records body of changes, with the webhook's adjusted After sets.
func document(changes []provider.Change, adjusted map[provider.RecordSetKey]Endpoint) Changes {
	var doc Changes
	for _, ch := range changes {
		switch ch.Action {
		case provider.ActionCreate:
			doc.Create = append(doc.Create, adjusted[ch.After.Key()])
		case provider.ActionUpdate:
			doc.UpdateOld = append(doc.UpdateOld, ToEndpoint(*ch.Before))
			doc.UpdateNew = append(doc.UpdateNew, adjusted[ch.After.Key()])
		case provider.ActionDelete:
			doc.Delete = append(doc.Delete, ToEndpoint(*ch.Before))
		}
	}
	return doc
}

// unsure reports whether the last POST /records to zone ended without an answer that says
// whether it was applied (provider.Unreachable: a 5xx of 500 to 510, a timeout, a reset).
func (p *Provider) unsure(zone string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.unsureZones[zone]
}

func (p *Provider) setUnsure(zone string, unsure bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case unsure && p.unsureZones == nil:
		p.unsureZones = map[string]bool{zone: true}
	case unsure:
		p.unsureZones[zone] = true
	default:
		delete(p.unsureZones, zone)
	}
}

// dropApplied is the step of a write to a zone whose last write may or may not have been
// applied (unsure), such as the guard's retry of it: one GET /records, and the changes the zone
// already shows done are left out (a Create or Update whose adjusted After the zone holds, a
// Delete of a set it lacks), so that a webhook whose create is not idempotent (a per-record API
// adding targets) does not apply them twice.
func (p *Provider) dropApplied(ctx context.Context, zone string, f DomainFilter, changes []provider.Change, adjusted map[provider.RecordSetKey]Endpoint) ([]provider.Change, error) {
	sets, err := p.records(ctx, zone, f)
	if err != nil {
		return nil, fmt.Errorf("read the zone after a write of unknown outcome: %w", err)
	}
	cur := make(map[provider.RecordSetKey]provider.RecordSet, len(sets))
	for _, rs := range sets {
		cur[rs.Key()] = rs
	}
	return slices.DeleteFunc(changes, func(ch provider.Change) bool {
		have, ok := cur[ch.Key()]
		if ch.After == nil {
			return !ok
		}
		want, _ := FromEndpoint(adjusted[ch.After.Key()])
		return ok && have.Equal(want)
	}), nil
}

// adjust returns the webhook's POST /adjustendpoints answer for each After set of changes, by
// key: remembered answers as they are, the others in one request (none when every answer is
// remembered). A key the answer lacks is an error wrapping provider.ErrNotCapable; endpoints of
// other keys in the answer are ignored (nothing planned them).
func (p *Provider) adjust(ctx context.Context, changes []provider.Change) (map[provider.RecordSetKey]Endpoint, error) {
	out := map[provider.RecordSetKey]Endpoint{}
	var in []Endpoint
	var sent []string // the cache key of each endpoint of in
	for _, ch := range changes {
		if ch.After == nil {
			continue
		}
		ep := ToEndpoint(*ch.After)
		key := adjustKey(ep)
		if got, ok := p.rememberedAdjustment(key); ok {
			out[ch.After.Key()] = got
			continue
		}
		in = append(in, ep)
		sent = append(sent, key)
	}
	if len(in) > 0 {
		var got endpointList
		if err := p.do(ctx, http.MethodPost, pathAdjust, in, &got, nil); err != nil {
			return nil, fmt.Errorf("adjust endpoints: %w", err)
		}
		byKey := map[provider.RecordSetKey]Endpoint{}
		for _, ep := range got {
			if rs, ok := FromEndpoint(ep); ok {
				if _, dup := byKey[rs.Key()]; !dup {
					byKey[rs.Key()] = ep
				}
			}
		}
		for i, ep := range in {
			rs, _ := FromEndpoint(ep)
			if adj, ok := byKey[rs.Key()]; ok {
				out[rs.Key()] = adj
				p.rememberAdjustment(sent[i], adj)
			}
		}
	}
	var dropped, retargeted []string
	for _, ch := range changes {
		if ch.After == nil {
			continue
		}
		adj, ok := out[ch.After.Key()]
		switch {
		case !ok:
			dropped = append(dropped, ch.After.Key().String())
		case !sameTargets(ToEndpoint(*ch.After), adj):
			retargeted = append(retargeted, ch.After.Key().String())
		}
	}
	if len(dropped) > 0 {
		return nil, fmt.Errorf("%w: the webhook's /adjustendpoints left out %s: it would not hold them as given", provider.ErrNotCapable, strings.Join(dropped, ", "))
	}
	if len(retargeted) > 0 {
		return nil, fmt.Errorf("%w: the webhook's /adjustendpoints changed the targets of %s: it would not hold them as given", provider.ErrNotCapable, strings.Join(retargeted, ", "))
	}
	return out, nil
}

// sameTargets reports whether endpoints a and b carry the same targets as dnsplane reads them
// (FromEndpoint: canonical, TXT unquoted), as sets: a webhook's adjustment may respell a
// target, never add, drop or replace one.
func sameTargets(a, b Endpoint) bool {
	ra, _ := FromEndpoint(a)
	rb, _ := FromEndpoint(b)
	ta, tb := slices.Sorted(slices.Values(ra.Targets)), slices.Sorted(slices.Values(rb.Targets))
	return slices.Equal(slices.Compact(ta), slices.Compact(tb))
}

// adjustKey is an endpoint's identity in the adjustment cache: its JSON with targets sorted
// (a set's targets are a multiset, RFC 2181 §5).
func adjustKey(ep Endpoint) string {
	ep.Targets = slices.Sorted(slices.Values(ep.Targets))
	b, _ := json.Marshal(ep) // an Endpoint of strings and ints always marshals
	return string(b)
}

// rememberedAdjustment returns the webhook's answer for the endpoint of key, if remembered.
func (p *Provider) rememberedAdjustment(key string) (Endpoint, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ep, ok := p.adjusted[key]
	return ep, ok
}

// AdjustCacheBytes bounds the remembered /adjustendpoints answers in bytes (the JSON of each
// endpoint sent and of the webhook's answer), whatever Config.AdjustCacheSize: a webhook whose
// answers are large (padded by a hostile one) cannot make the cache hold AdjustCacheSize of them.
const AdjustCacheBytes = 8 << 20

// rememberAdjustment keeps the webhook's answer for the endpoint of key, starting the cache
// again empty when it holds Config.AdjustCacheSize answers or would pass AdjustCacheBytes; an
// answer larger than AdjustCacheBytes alone is not kept.
func (p *Provider) rememberAdjustment(key string, ep Endpoint) {
	if p.adjustedSize < 0 {
		return
	}
	b, _ := json.Marshal(ep) // an Endpoint of strings and ints always marshals
	size := len(key) + len(b)
	if size > AdjustCacheBytes {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.adjusted == nil || len(p.adjusted) >= p.adjustedSize || p.adjustedBytes+size > AdjustCacheBytes {
		p.adjusted = make(map[string]Endpoint)
		p.adjustedBytes = 0
	}
	if _, ok := p.adjusted[key]; !ok {
		p.adjustedBytes += size
	}
	p.adjusted[key] = ep
}

// checkSet is the webhook's SideCheck: After canonical in full (provider.ValidateChangeSet,
// which refuses set identifiers and weights without weighted routing); Before by its key only
// (it addresses a set as the webhook listed it, and its targets may be of a type this build
// cannot parse); both in the zone and not inside a deeper zone of the filter; never the SOA;
// never a name the filter does not match (DomainFilter.Match: external-dns never sends one).
func checkSet(zone string, f DomainFilter, action provider.Action, which string, rs provider.RecordSet) (provider.RecordSet, error) {
	var c provider.RecordSet
	var err error
	if which == "After" {
		c, err = provider.ValidateChangeSet(action, which, &rs, zone, provider.Capabilities{})
	} else {
		c = rs.Clone()
		c.Name, err = provider.ValidateName(rs.Name)
		c.Type = strings.ToUpper(strings.TrimSpace(rs.Type))
		if err == nil && (c.Type == "" || len(c.Targets) == 0) {
			err = fmt.Errorf("%w: %s: a Before needs a type and its targets", provider.ErrInvalidChange, c.Key())
		}
	}
	if err != nil {
		return provider.RecordSet{}, err
	}
	if err := inFilter(zone, f, c); err != nil {
		return provider.RecordSet{}, err
	}
	return c, nil
}

// inFilter is checkSet's check of a canonical set against the zone and the webhook's filter.
func inFilter(zone string, f DomainFilter, c provider.RecordSet) error {
	switch {
	case !f.Holds(zone, c.Name, c.Type) && dnswire.IsSubdomain(c.Name, zone):
		return fmt.Errorf("%w: %s is inside a deeper zone of the webhook's domain filter, not in %s", provider.ErrInvalidChange, c.Key(), zone)
	case !dnswire.IsSubdomain(c.Name, zone):
		return fmt.Errorf("%w: %s is not in zone %s", provider.ErrInvalidChange, c.Key(), zone)
	case c.Type == "SOA":
		return fmt.Errorf("%w: %s: the SOA is the webhook's own", provider.ErrInvalidChange, c.Key())
	case !f.Match(c.Name):
		return fmt.Errorf("%w: %s is excluded by the webhook's domain filter (external-dns never writes it)", provider.ErrInvalidChange, c.Key())
	}
	return nil
}

// recheck negotiates again and checks the sets of a write about to be sent against the filter
// the webhook answers now (inFilter), so that a name it came to exclude since its remembered
// filter was read (Config.FilterMaxAge) is never written: one GET / per POST /records sent.
func (p *Provider) recheck(ctx context.Context, zone string, changes []provider.Change) error {
	f, err := p.Negotiate(ctx)
	if err != nil {
		return err
	}
	if !f.Match(zone) {
		return fmt.Errorf("zone %s: %w: the webhook's domain filter does not match it", zone, provider.ErrZoneNotFound)
	}
	for _, ch := range changes {
		for _, rs := range []*provider.RecordSet{ch.Before, ch.After} {
			if rs == nil {
				continue
			}
			if err := inFilter(zone, f, *rs); err != nil {
				return err
			}
		}
	}
	return nil
}

// coalesce collapses the changes to one key into one change with the same end state, at the
// position of the key's first change: over a set that existed before (a first change that is an
// Update or Delete) the result is an Update from the first Before to the last After, or a
// Delete of the first Before; over a set that did not (a first Create), a Create of the last
// After, or nothing. Shared is kept when any of them is.
func coalesce(changes []provider.Change) []provider.Change {
	type state struct {
		before *provider.RecordSet // the set before the first change; nil when it did not exist
		after  *provider.RecordSet // the set after the last change; nil when none is left
		shared bool
	}
	var order []provider.RecordSetKey
	states := map[provider.RecordSetKey]*state{}
	for _, ch := range changes {
		k := ch.Key()
		st, ok := states[k]
		if !ok {
			st = &state{}
			if ch.Action != provider.ActionCreate {
				st.before = ch.Before
			}
			states[k] = st
			order = append(order, k)
		}
		st.after = nil
		if ch.Action != provider.ActionDelete {
			st.after = ch.After
		}
		st.shared = st.shared || ch.Shared
	}
	out := make([]provider.Change, 0, len(order))
	for _, k := range order {
		st := states[k]
		switch {
		case st.before != nil && st.after != nil:
			out = append(out, provider.Change{Action: provider.ActionUpdate, Before: st.before, After: st.after, Shared: st.shared})
		case st.before != nil:
			out = append(out, provider.Change{Action: provider.ActionDelete, Before: st.before, Shared: st.shared})
		case st.after != nil:
			out = append(out, provider.Change{Action: provider.ActionCreate, After: st.after, Shared: st.shared})
		}
	}
	return out
}

// readMerged reports whether ch is applied by read-merge-write: a Shared change, not to a
// registry record (one value of one writer), not to a single-valued type.
func readMerged(ch provider.Change) bool {
	if !ch.Shared {
		return false
	}
	k := ch.Key()
	switch k.Type {
	case "CNAME", "DNAME", "SOA":
		return false
	case "TXT":
		return !provider.IsRegistryName(k.Name)
	}
	return true
}

// mergeShared reads the zone (one GET /records) and rewrites each change that readMerged as
// its delta onto the set as read: the set's targets without those the change removes, then
// those it adds, with After's TTL and options (the current ones for a Delete). The result is an
// Update from the set as read, a Create when there is none, a Delete when no target is left, or
// nothing when there was no set and none is left, or the set as read is already the result. Later changes of the same call see the
// earlier ones' results.
func (p *Provider) mergeShared(ctx context.Context, zone string, f DomainFilter, changes []provider.Change) ([]provider.Change, error) {
	sets, err := p.records(ctx, zone, f)
	if err != nil {
		return nil, fmt.Errorf("read the current sets of shared changes: %w", err)
	}
	state := make(map[provider.RecordSetKey]*provider.RecordSet, len(sets))
	for i := range sets {
		state[sets[i].Key()] = &sets[i]
	}
	out := make([]provider.Change, 0, len(changes))
	for _, ch := range changes {
		if !readMerged(ch) {
			out = append(out, ch)
			continue
		}
		k := ch.Key()
		cur := state[k]
		var before []string
		if ch.Before != nil {
			before = canonicalTargets(*ch.Before)
		}
		var next provider.RecordSet
		switch {
		case ch.After != nil:
			next = ch.After.Clone()
		case cur != nil:
			next = cur.Clone()
		default:
			next = ch.Before.Clone()
		}
		next.Targets = nil
		if cur != nil {
			for _, t := range cur.Targets {
				if !slices.Contains(before, t) || ch.After != nil && slices.Contains(ch.After.Targets, t) {
					next.Targets = append(next.Targets, t)
				}
			}
		}
		if ch.After != nil {
			for _, t := range ch.After.Targets {
				if !slices.Contains(next.Targets, t) {
					next.Targets = append(next.Targets, t)
				}
			}
		}
		switch {
		case cur == nil && len(next.Targets) == 0:
			continue
		case cur == nil:
			out = append(out, provider.Change{Action: provider.ActionCreate, After: &next, Shared: true})
			state[k] = &next
		case len(next.Targets) == 0:
			out = append(out, provider.Change{Action: provider.ActionDelete, Before: cur, Shared: true})
			delete(state, k)
		case next.Equal(*cur):
			continue // the set already is what the change makes of it
		default:
			out = append(out, provider.Change{Action: provider.ActionUpdate, Before: cur, After: &next, Shared: true})
			state[k] = &next
		}
	}
	return out, nil
}

// canonicalTargets returns rs's targets in canonical form where they parse (as given where they
// do not), so that they compare with listed ones.
func canonicalTargets(rs provider.RecordSet) []string {
	out := make([]string, 0, len(rs.Targets))
	for _, t := range rs.Targets {
		if c, err := provider.CanonicalTarget(rs.Type, t); err == nil {
			t = c
		}
		out = append(out, t)
	}
	return out
}
