package pdns

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// Metadata kinds dnsplane writes on the zones it creates. PowerDNS accepts
// any kind starting with "X-" through the API.
const (
	MetaCallerReference = "X-DNSPLANE-CALLER-REFERENCE"
	MetaTag             = "X-DNSPLANE-TAG"
)

// DefaultServerID is the PowerDNS server id used when Config.ServerID is
// empty.
const DefaultServerID = "localhost"

// DefaultTimeout bounds each HTTP request when Config.Timeout is 0.
const DefaultTimeout = 30 * time.Second

// maxBody bounds how much of a response body is read.
const maxBody = 64 << 20

// Config configures a Provider.
type Config struct {
	// APIURL is the webserver root, e.g. "http://127.0.0.1:8081"; the
	// provider appends /api/v1/servers/<ServerID>. Required.
	APIURL string
	// APIKey is sent as X-API-Key. Required. Never logged or returned.
	APIKey string
	// ServerID is the PowerDNS server id; default "localhost".
	ServerID string
	// Nameservers are the NS names of new zones; default ns1.<zone>.
	Nameservers []string
	// HTTPClient is the client used for every request; default a new
	// http.Client (requests are bounded by Timeout and the caller's ctx).
	HTTPClient *http.Client
	// Timeout bounds each request; default DefaultTimeout.
	Timeout time.Duration
	// MaxWritesInFlight is Capabilities().MaxWritesInFlight: how many
	// PATCHes dnsplane sends this server at once; 0 = DefaultMaxWritesInFlight.
	// Raise it only for a backend that takes concurrent writes (gpgsql,
	// gmysql); the Secret key PDNS_MAX_WRITES_IN_FLIGHT sets it.
	MaxWritesInFlight int
	// ClaimReadMaxAge lets a write that creates record sets check their
	// absence against a whole-zone read of this provider made at most this
	// long ago (plus the provider's own writes since), instead of a GET just
	// before the PATCH; 0 always reads (see ApplyChanges). The Secret key
	// PDNS_CLAIM_READ_MAX_AGE sets it; the factory's default is
	// DefaultClaimReadMaxAge.
	ClaimReadMaxAge time.Duration
	// MaxRequestBytes is the most bytes of rrset JSON one PATCH carries
	// (Capabilities().MaxValueBytesPerBatch, counted by RequestCost); 0 =
	// DefaultMaxRequestBytes. The Secret key PDNS_MAX_REQUEST_BYTES sets it.
	MaxRequestBytes int
}

// DefaultMaxRequestBytes keeps a PATCH under PowerDNS's webserver-max-bodysize,
// whose default is 2 MB (pdns_server --config: "Webserver/API maximum
// request/response body size in megabytes", webserver-max-bodysize=2), with a
// margin for the JSON around the rrsets. A bigger PATCH is refused whole, and
// the zone writer would then retry its changes one by one: make bench at
// 50,000 endpoints with batches of 20,000 changes (about 4 MB) sent 60,058
// requests instead of 76.
const DefaultMaxRequestBytes = 1_500_000

// DefaultClaimReadMaxAge is the factory's Config.ClaimReadMaxAge: 0, a GET
// just before every write that creates sets. A longer age is for zones that
// no other writer touches: where another cluster's manager or external-dns
// writes the same zone, a set it creates within the age is overwritten
// (controllers' TestHandover_HolderDeletedInAnotherClusterFreesItsNames saw
// it at 1 s: the second cluster's Create replaced the first's five sets).
// external-dns checks against a read one sync interval old (a minute).
const DefaultClaimReadMaxAge time.Duration = 0

// DefaultMaxWritesInFlight is one write at a time: PowerDNS' sqlite backend
// (gsqlite3, the default of most packages) takes one write transaction at a
// time and answers a PATCH that overlaps another with HTTP 500 "database is
// locked".
const DefaultMaxWritesInFlight = 1

// Provider implements provider.Provider over the PowerDNS HTTP API. It is
// safe for concurrent use.
type Provider struct {
	base        string // <APIURL>/api/v1/servers/<id>
	key         string
	nameservers []string // canonical
	client      *http.Client
	timeout     time.Duration
	writes      int // MaxWritesInFlight
	claimAge    time.Duration
	maxRequest  int // MaxRequestBytes

	mu sync.Mutex
	// recent holds, by canonical zone, the record set keys of the zone's last
	// whole-zone read (and of this provider's writes since), while it is at
	// most claimAge old; empty when claimAge is 0.
	recent map[string]*recentRead
	// writes counts, by canonical zone, the PATCHes sent, so that a read that
	// overlapped a write is not remembered (see remember).
	patches map[string]uint64
}

// recentRead is what a whole-zone read saw: the keys of its record sets,
// canonical, with this provider's writes since applied.
type recentRead struct {
	at   time.Time // when the read was sent
	keys map[provider.RecordSetKey]struct{}
}

var (
	_ provider.Provider     = (*Provider)(nil)
	_ provider.RequestSizer = (*Provider)(nil)
)

// New validates cfg and returns a provider. It does no I/O. A missing or
// malformed URL or key, or a bad name server name, gives an error wrapping
// provider.ErrInvalidCredentials.
func New(cfg Config) (*Provider, error) {
	u, err := provider.ParseAPIURL("PDNS_API_URL", cfg.APIURL, "http://127.0.0.1:8081")
	if err != nil {
		return nil, err
	}
	if cfg.APIKey == "" || strings.ContainsAny(cfg.APIKey, "\r\n") {
		return nil, fmt.Errorf("%w: PDNS_API_KEY is empty or malformed", provider.ErrInvalidCredentials)
	}
	serverID := cfg.ServerID
	if serverID == "" {
		serverID = DefaultServerID
	}
	var ns []string
	for _, n := range cfg.Nameservers {
		if strings.TrimSpace(n) == "" {
			continue
		}
		c, err := provider.ValidateName(n)
		if err != nil {
			return nil, fmt.Errorf("%w: PDNS_NAMESERVERS: %v", provider.ErrInvalidCredentials, err)
		}
		ns = append(ns, c)
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	writes := cfg.MaxWritesInFlight
	if writes <= 0 {
		writes = DefaultMaxWritesInFlight
	}
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	return &Provider{
		base:        strings.TrimRight(u.String(), "/") + "/api/v1/servers/" + url.PathEscape(serverID),
		key:         cfg.APIKey,
		nameservers: ns,
		client:      client,
		timeout:     timeout,
		writes:      writes,
		claimAge:    max(cfg.ClaimReadMaxAge, 0),
		maxRequest:  cfg.MaxRequestBytes,
		recent:      map[string]*recentRead{},
		patches:     map[string]uint64{},
	}, nil
}

// Capabilities: one PATCH carries any number of rrsets, up to
// Config.MaxRequestBytes of their JSON (RequestCost; PowerDNS's
// webserver-max-bodysize); no conditional writes, no weighted routing; zones
// can be created; Config.MaxWritesInFlight PATCHes at once (default 1, see
// DefaultMaxWritesInFlight).
func (p *Provider) Capabilities() provider.Capabilities {
	return provider.Capabilities{
		BatchWrites:           true,
		MaxChangesPerBatch:    0,
		MaxValueBytesPerBatch: p.maxRequest,
		ConditionalWrites:     false,
		WeightedRouting:       false,
		CreateZones:           true,
		MaxWritesInFlight:     p.writes,
	}
}

// RequestCost implements provider.RequestSizer: one rrset, and the bytes of
// the JSON the PATCH carries for ch (After's rrset with its records for a
// Create or Update, a DELETE of Before's key), against MaxValueBytesPerBatch.
// A change this build cannot spell (ApplyChanges refuses it) costs its
// presentation form (provider.ChangeCost).
func (p *Provider) RequestCost(ch provider.Change) (elements, valueBytes int) {
	rs := ch.After
	if ch.Action == provider.ActionDelete || rs == nil {
		if ch.Before == nil {
			return provider.ChangeCost(ch)
		}
		b, _ := json.Marshal(apiRRSet{Name: dnswire.Fqdn(ch.Before.Name), Type: ch.Before.Type, ChangeType: "DELETE"})
		return 1, len(b) + 1
	}
	a, err := toAPI(*rs)
	if err != nil {
		return provider.ChangeCost(ch)
	}
	b, err := json.Marshal(a)
	if err != nil {
		return provider.ChangeCost(ch)
	}
	return 1, len(b) + 1 // and a comma
}

// ZoneID returns the PowerDNS zone id of a zone name ("example.test" ->
// "example.test."), valid for host-name zones.
func ZoneID(zoneName string) string { return dnswire.Fqdn(zoneName) }

// API types (PowerDNS Authoritative HTTP API).
type apiZone struct {
	ID          string     `json:"id,omitempty"`
	Name        string     `json:"name"`
	Kind        string     `json:"kind,omitempty"`
	Account     string     `json:"account,omitempty"`
	Nameservers []string   `json:"nameservers,omitempty"`
	RRSets      []apiRRSet `json:"rrsets,omitempty"`
}

type apiRRSet struct {
	Name       string      `json:"name"`
	Type       string      `json:"type"`
	TTL        int64       `json:"ttl"`
	ChangeType string      `json:"changetype,omitempty"`
	Records    []apiRecord `json:"records,omitempty"`
}

type apiRecord struct {
	Content  string `json:"content"`
	Disabled bool   `json:"disabled"`
}

type apiMetadata struct {
	Kind     string   `json:"kind"`
	Metadata []string `json:"metadata"`
}

type apiPatch struct {
	RRSets []apiRRSet `json:"rrsets"`
}

// errStatus is an HTTP status PowerDNS returned; kept in the chain so that
// EnsureZone can recognise 409.
type errStatus struct {
	code int
	msg  string
}

func (e *errStatus) Error() string {
	if e.msg == "" {
		return fmt.Sprintf("HTTP %d", e.code)
	}
	return fmt.Sprintf("HTTP %d: %s", e.code, e.msg)
}

// do sends one request under the provider's timeout and decodes a 2xx JSON
// body into out (when non-nil). Errors name the method and path, never the
// key.
func (p *Provider) do(ctx context.Context, method, path string, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: encode: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("X-API-Key", p.key)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.client.Do(req)
	if err != nil {
		// *url.Error carries the URL (no key: it travels in a header).
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return fmt.Errorf("%s %s: read response: %w", method, path, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if out != nil && resp.StatusCode != http.StatusNoContent {
			if err := json.Unmarshal(data, out); err != nil {
				return fmt.Errorf("%s %s: decode response: %w", method, path, err)
			}
		}
		return nil
	}
	return fmt.Errorf("%s %s: %w", method, path, statusError(resp, data))
}

// statusError maps a non-2xx response onto the provider's typed errors. A
// 5xx means the server is busy or failing, not that the request is wrong:
// PowerDNS answers 500 "database is locked" when its sqlite backend is
// writing for another request, and 503 when overloaded. Those are a
// provider.ThrottledError, so that the guard backs off and retries the same
// request, and the zone writer never splits it into per-submission retries.
func statusError(resp *http.Response, data []byte) error {
	se := &errStatus{code: resp.StatusCode, msg: errorText(data)}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("%w: %w", provider.ErrInvalidCredentials, se)
	case http.StatusNotFound:
		return fmt.Errorf("%w: %w", provider.ErrZoneNotFound, se)
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return fmt.Errorf("%w: %w", provider.ErrInvalidChange, se)
	case http.StatusTooManyRequests:
		return &provider.ThrottledError{RetryAfter: retryAfter(resp.Header.Get("Retry-After")), Err: se}
	}
	if resp.StatusCode >= 500 {
		return &provider.ThrottledError{RetryAfter: retryAfter(resp.Header.Get("Retry-After")), Err: se}
	}
	return se
}

// errorText is PowerDNS' {"error": "..."} message, or the trimmed body.
func errorText(data []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(data, &e) == nil && e.Error != "" {
		return e.Error
	}
	s := strings.TrimSpace(string(data))
	if len(s) > 512 {
		s = s[:512] + "..."
	}
	return s
}

func retryAfter(h string) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(h); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

func zonePath(id string) string { return "/zones/" + url.PathEscape(id) }

// EnsureZone creates the zone (kind Native, with the configured name servers
// or ns1.<zone>, and an SOA naming the first of them: see SOASerial), or
// returns it when it exists with the same caller
// reference. The caller reference is written with the zone itself (its
// account field) and mirrored in metadata together with the tags; tags of an
// existing zone are not updated. A zone of that name with another caller
// reference, or none, gives provider.ErrZoneConflict. An own zone whose SOA
// still has PowerDNS' placeholder MNAME (PlaceholderMNAME: created by a
// build that sent no SOA) gets this provider's SOA, one more PATCH.
func (p *Provider) EnsureZone(ctx context.Context, spec provider.ZoneSpec) (provider.Zone, error) {
	name, err := provider.ValidateName(spec.Name)
	if err != nil {
		return provider.Zone{}, fmt.Errorf("ensure zone %s: %w", spec.Name, err)
	}
	if strings.HasPrefix(name, "*") || spec.CallerReference == "" {
		return provider.Zone{}, fmt.Errorf("ensure zone %s: %w: zone names cannot be wildcards and a caller reference is required", name, provider.ErrInvalidChange)
	}
	id := ZoneID(name)
	z, err := p.getZone(ctx, id)
	if errors.Is(err, provider.ErrZoneNotFound) {
		z, err = p.createZone(ctx, name, spec)
		var se *errStatus
		if errors.As(err, &se) && se.code == http.StatusConflict {
			// Created concurrently by someone else: check whose it is.
			z, err = p.getZone(ctx, id)
		} else if err == nil {
			return z.Zone, nil
		}
	}
	if err != nil {
		return provider.Zone{}, fmt.Errorf("ensure zone %s: %w", name, err)
	}
	if z.CallerReference != spec.CallerReference {
		return provider.Zone{}, fmt.Errorf("ensure zone %s: %w (existing caller reference %q)", name, provider.ErrZoneConflict, z.CallerReference)
	}
	if err := p.repairSOA(ctx, z); err != nil {
		return provider.Zone{}, fmt.Errorf("ensure zone %s: %w", name, err)
	}
	if !z.metaRef {
		// A crash between creation and the metadata write: complete it.
		if err := p.writeMeta(ctx, z.ID, spec); err != nil {
			return provider.Zone{}, fmt.Errorf("ensure zone %s: %w", name, err)
		}
		z.Tags = maps.Clone(spec.Tags)
	}
	return z.Zone, nil
}

func (p *Provider) createZone(ctx context.Context, name string, spec provider.ZoneSpec) (zoneInfo, error) {
	ns := p.nameservers
	if len(ns) == 0 {
		ns = []string{"ns1." + name}
	}
	req := apiZone{Name: dnswire.Fqdn(name), Kind: "Native", Account: spec.CallerReference,
		RRSets: []apiRRSet{soaRRSet(name, ns, SOASerial)}}
	for _, n := range ns {
		req.Nameservers = append(req.Nameservers, dnswire.Fqdn(n))
	}
	var created apiZone
	if err := p.do(ctx, http.MethodPost, "/zones", req, &created); err != nil {
		return zoneInfo{}, err
	}
	if created.ID == "" {
		created.ID = dnswire.Fqdn(name)
	}
	if err := p.writeMeta(ctx, created.ID, spec); err != nil {
		return zoneInfo{}, err
	}
	z := toZone(created, spec.CallerReference, maps.Clone(spec.Tags))
	if len(z.NameServers) == 0 {
		z.NameServers = slices.Clone(ns)
	}
	return zoneInfo{Zone: z, metaRef: true}, nil
}

// writeMeta stores the caller reference and the tags as zone metadata.
func (p *Provider) writeMeta(ctx context.Context, id string, spec provider.ZoneSpec) error {
	path := zonePath(id) + "/metadata/"
	if len(spec.Tags) > 0 {
		var items []string
		for _, k := range slices.Sorted(maps.Keys(spec.Tags)) {
			items = append(items, k+"="+spec.Tags[k])
		}
		if err := p.do(ctx, http.MethodPut, path+MetaTag, apiMetadata{Kind: MetaTag, Metadata: items}, nil); err != nil {
			return err
		}
	}
	// Written last: its presence means the metadata is complete.
	return p.do(ctx, http.MethodPut, path+MetaCallerReference, apiMetadata{Kind: MetaCallerReference, Metadata: []string{spec.CallerReference}}, nil)
}

// zoneInfo is a zone, whether its caller reference came from metadata, and its SOA when that
// is PowerDNS' placeholder.
type zoneInfo struct {
	provider.Zone
	metaRef     bool
	placeholder *dns.SOA
}

// getZone reads the zone (with its rrsets, for the name servers) and its
// metadata.
func (p *Provider) getZone(ctx context.Context, id string) (zoneInfo, error) {
	if id == "" {
		return zoneInfo{}, provider.ErrZoneNotFound
	}
	var z apiZone
	if err := p.do(ctx, http.MethodGet, zonePath(id), nil, &z); err != nil {
		return zoneInfo{}, err
	}
	var meta []apiMetadata
	if err := p.do(ctx, http.MethodGet, zonePath(id)+"/metadata", nil, &meta); err != nil {
		return zoneInfo{}, err
	}
	ref, metaRef := z.Account, false
	var tags map[string]string
	for _, m := range meta {
		switch m.Kind {
		case MetaCallerReference:
			if len(m.Metadata) > 0 {
				ref, metaRef = m.Metadata[0], true
			}
		case MetaTag:
			for _, item := range m.Metadata {
				k, v, _ := strings.Cut(item, "=")
				if tags == nil {
					tags = map[string]string{}
				}
				tags[k] = v
			}
		}
	}
	return zoneInfo{Zone: toZone(z, ref, tags), metaRef: metaRef, placeholder: placeholderSOA(z)}, nil
}

func toZone(z apiZone, ref string, tags map[string]string) provider.Zone {
	out := provider.Zone{
		ID:              z.ID,
		Name:            dnswire.Dotless(z.Name),
		CallerReference: ref,
		Tags:            tags,
	}
	for _, rs := range z.RRSets {
		if rs.Type != "NS" || !strings.EqualFold(dnswire.Fqdn(rs.Name), dnswire.Fqdn(z.Name)) {
			continue
		}
		for _, r := range rs.Records {
			if !r.Disabled {
				out.NameServers = append(out.NameServers, dnswire.Dotless(r.Content))
			}
		}
	}
	return out
}

// GetZone returns the zone with that PowerDNS id ("example.test."), or
// provider.ErrZoneNotFound.
func (p *Provider) GetZone(ctx context.Context, id string) (provider.Zone, error) {
	z, err := p.getZone(ctx, id)
	if err != nil {
		return provider.Zone{}, fmt.Errorf("get zone %s: %w", id, err)
	}
	return z.Zone, nil
}

// ReadZone implements provider.ZoneReader: the zone with that PowerDNS id and its rrsets (as
// ListRecordSets gives them), from one GET of the zone. Its CallerReference is the zone's
// account field (EnsureZone writes the caller reference there with the zone), and its metadata
// (tags, and the caller reference mirrored there) is not read: GetZone reads it.
func (p *Provider) ReadZone(ctx context.Context, id string) (provider.Zone, []provider.RecordSet, error) {
	if id == "" {
		return provider.Zone{}, nil, fmt.Errorf("read zone: %w", provider.ErrZoneNotFound)
	}
	var z apiZone
	gen, at := p.readStarts(id)
	if err := p.do(ctx, http.MethodGet, zonePath(id), nil, &z); err != nil {
		return provider.Zone{}, nil, fmt.Errorf("read zone %s: %w", id, err)
	}
	sets := recordSets(z)
	p.remember(id, gen, at, sets)
	return toZone(z, z.Account, nil), sets, nil
}

// ListZones returns every zone of the server in one request. The list API
// has no rrsets or metadata, so NameServers and Tags are left empty and
// CallerReference is the zone's account field (where EnsureZone writes it);
// GetZone returns the full zone.
func (p *Provider) ListZones(ctx context.Context) ([]provider.Zone, error) {
	var zones []apiZone
	if err := p.do(ctx, http.MethodGet, "/zones", nil, &zones); err != nil {
		return nil, fmt.Errorf("list zones: %w", err)
	}
	out := make([]provider.Zone, 0, len(zones))
	for _, z := range zones {
		out = append(out, toZone(z, z.Account, nil))
	}
	return out, nil
}

// DeleteZone deletes the zone with its records and metadata in one request.
func (p *Provider) DeleteZone(ctx context.Context, id string) error {
	if id == "" {
		return fmt.Errorf("delete zone: %w", provider.ErrZoneNotFound)
	}
	p.forget(id)
	if err := p.do(ctx, http.MethodDelete, zonePath(id), nil, nil); err != nil {
		return fmt.Errorf("delete zone %s: %w", id, err)
	}
	return nil
}

// ListRecordSets returns the zone's rrsets (the SOA and apex NS included) in
// canonical form; disabled records are skipped, and an rrset with no enabled
// record is left out. One GET of the zone, as ReadZone.
func (p *Provider) ListRecordSets(ctx context.Context, zoneID string) ([]provider.RecordSet, error) {
	if zoneID == "" {
		return nil, fmt.Errorf("list record sets: %w", provider.ErrZoneNotFound)
	}
	var z apiZone
	gen, at := p.readStarts(zoneID)
	if err := p.do(ctx, http.MethodGet, zonePath(zoneID), nil, &z); err != nil {
		return nil, fmt.Errorf("list record sets of %s: %w", zoneID, err)
	}
	sets := recordSets(z)
	p.remember(zoneID, gen, at, sets)
	return sets, nil
}

// recordSets converts the rrsets of z to canonical form, never nil.
func recordSets(z apiZone) []provider.RecordSet {
	out := make([]provider.RecordSet, 0, len(z.RRSets))
	for _, rs := range z.RRSets {
		if set, ok := fromAPI(rs); ok {
			out = append(out, set)
		}
	}
	return out
}

// fromAPI converts one rrset to canonical form.
func fromAPI(rs apiRRSet) (provider.RecordSet, bool) {
	out := provider.RecordSet{Name: dnswire.Dotless(rs.Name), Type: strings.ToUpper(rs.Type), TTL: rs.TTL}
	for _, r := range rs.Records {
		if r.Disabled {
			continue
		}
		out.Targets = append(out.Targets, targetFromContent(out.Name, out.Type, r.Content))
	}
	return out, len(out.Targets) > 0
}

// targetFromContent parses PowerDNS content (presentation form, absolute
// names) into a canonical target; content miekg/dns cannot parse (types it
// does not know, such as ALIAS or LUA) is returned trimmed.
func targetFromContent(name, rtype, content string) string {
	if _, known := dns.StringToType[rtype]; known {
		rr, err := dns.NewRR(dnswire.Fqdn(name) + " 0 IN " + rtype + " " + content)
		if err == nil && rr != nil && dns.TypeToString[rr.Header().Rrtype] == rtype {
			return provider.TargetFromRR(rr)
		}
	}
	return strings.TrimSpace(content)
}

// toAPI converts a canonical set into a REPLACE rrset.
func toAPI(rs provider.RecordSet) (apiRRSet, error) {
	rrs, err := provider.ToRRs(rs)
	if err != nil {
		return apiRRSet{}, err
	}
	out := apiRRSet{Name: dnswire.Fqdn(rs.Name), Type: rs.Type, TTL: rs.TTL, ChangeType: "REPLACE", Records: make([]apiRecord, 0, len(rrs))}
	for _, rr := range rrs {
		out.Records = append(out.Records, apiRecord{Content: strings.TrimPrefix(rr.String(), rr.Header().String())})
	}
	return out, nil
}

// ApplyChanges validates every change first (provider.ErrInvalidChange;
// weighted sets give provider.ErrNotCapable), then sends them as one PATCH
// (PowerDNS takes any number of rrsets per request).
//
// PowerDNS has no conditional write, so a plain REPLACE would drop a target
// another writer added between our read and our write (docs/providers.md,
// "Writes: batches, conditions and idempotency"; dnsplane API contract,
// "Lost targets heal themselves"). So
// record sets shared by many writers (provider.Change.Shared: DNSRecord
// sets) are written by read-merge-write: just before the PATCH, the current
// rrsets of the names being changed are read
// (one GET of the zone filtered with rrset_name when a single name is
// changed, else one GET of the whole zone), and each change is applied as a
// delta onto the fresh set:
//   - Create writes After's targets; the set must be absent (see below);
//   - Update adds After-Before and removes Before-After (targets compared
//     in canonical form), and takes After's TTL;
//   - Delete removes Before's targets and keeps the rest with its TTL.
//
// A set left with no target is deleted. When the fresh set equals Before the
// result is exactly After (or nothing, for a Delete), so a writer alone sees
// no difference from REPLACE. The window between the GET and the PATCH
// remains: another writer's read-merge-write that read before this PATCH
// landed and writes after it replaces the set without this write's targets
// (a lost update). So after the PATCH the same names are read once more, and
// when a target this call added is missing, ApplyChanges returns an error
// wrapping provider.ErrConflict although the PATCH landed: the caller
// re-reads and writes again at once (a DNSRecord reconcile requeues; see
// verify) rather than at the contributor's next self-heal, one heartbeat
// interval later. A lost update landing after that read is not seen here;
// DNSRecord's periodic self-heal restores it.
//
// Those reads are skipped, and changes are written as they come (REPLACE with
// all of After's records, DELETE by key), for changes that are not Shared (a set with one
// writer: every DNSEndpoint set), dnsplane registry records (TXT at
// provider.IsRegistryName names, which hold one value of one writer and must
// never gain a second, even when marked Shared), single-valued types (CNAME,
// DNAME), and sets whose type or Before this build cannot parse.
//
// A Create of a record set (not a registry record), Shared or not, is a new
// claim: the caller read the set absent and its planner let it take the name.
// Another owner may have created the set since that read (external-dns
// writes its registry TXT and its set in one PATCH), and a REPLACE would
// overwrite that owner's set. So the names of the Creates are read too, in
// the same GET as the Shared changes' names, before the PATCH, and a Create
// whose set that read holds (and that no earlier change of the call wrote)
// fails the call with an error wrapping provider.ErrConflict, with nothing
// sent: as a provider with conditional writes refuses a Create of an existing
// set (the embedded server; RFC 2136's "RRset does not exist" prerequisite).
// The zone writer then re-reads the zone and the planner reports the name as
// held (OwnershipConflict, naming the external-dns owner) at the immediate
// retry, instead of after the next zone re-read with the set overwritten. A
// set created in the window between that GET and the PATCH (one round trip)
// is still overwritten, and seen at the next read of the zone.
//
// When Config.ClaimReadMaxAge is set (Secret key PDNS_CLAIM_READ_MAX_AGE; the
// default, DefaultClaimReadMaxAge, is 0: always read) and no change of the call is applied by
// read-merge-write, that check uses the provider's last whole-zone read of the
// zone (ReadZone, ListRecordSets, or such a GET before an earlier PATCH) when
// it was sent at most that long ago, with this provider's PATCHes since
// applied, and sends no GET: the window in which another owner's new set is
// overwritten is then that age plus one round trip. A read that overlapped a
// PATCH is not kept, and a PATCH that fails drops the zone's read.
//
// So a batch of Updates and Deletes of DNSEndpoint sets, or of heartbeats
// (registry records only), costs one PATCH and no GET; a batch with Creates
// one GET more (filtered to the name when it creates, or merges, at one name
// only; else the whole zone), and a batch with Shared changes also one GET
// after the PATCH.
//
// Several changes to one key are applied in order and collapse into one
// rrset, at the position of the first (PowerDNS takes one rrset per key and
// request). Errors wrap provider.ErrZoneNotFound for an unknown zone and the
// typed errors of the HTTP status (see the package doc).
func (p *Provider) ApplyChanges(ctx context.Context, zoneID string, changes []provider.Change) error {
	if zoneID == "" {
		return fmt.Errorf("apply changes: %w", provider.ErrZoneNotFound)
	}
	zone := dnswire.Dotless(zoneID)
	prepared, err := provider.PrepareChanges(zoneID, changes, func(_ provider.Action, which string, rs provider.RecordSet) (provider.RecordSet, error) {
		return checkSet(zone, which, rs)
	}, prepare)
	if err != nil {
		return err
	}
	if len(prepared) == 0 {
		return nil
	}
	rrsets, err := p.merge(ctx, zoneID, prepared)
	if err != nil {
		return fmt.Errorf("apply changes to %s: %w", zoneID, err)
	}
	p.writing(zoneID)
	if err := p.do(ctx, http.MethodPatch, zonePath(zoneID), apiPatch{RRSets: coalesce(rrsets)}, nil); err != nil {
		p.forget(zoneID) // the PATCH may have landed, in part or whole
		return fmt.Errorf("apply changes to %s: %w", zoneID, err)
	}
	p.wrote(zoneID, prepared, rrsets)
	if err := p.verify(ctx, zoneID, prepared); err != nil {
		p.forget(zoneID)
		return fmt.Errorf("apply changes to %s: %w", zoneID, err)
	}
	return nil
}

// verify re-reads, once PATCHed, the names whose changes were applied by
// read-merge-write (one GET, as merge's) and returns an error wrapping
// provider.ErrConflict when a target those changes added is missing: a
// concurrent read-merge-write of the set, which read before this PATCH landed
// and wrote after it, dropped it. The PATCH landed, so a read that fails is
// not an error (the self-heal is the backstop); nor is a target a later
// change of the same call removed, nor a key that a change without a delta
// replaced.
func (p *Provider) verify(ctx context.Context, zoneID string, part []change) error {
	want := map[provider.RecordSetKey][]string{}
	names := map[string]bool{}
	for _, c := range part {
		if c.delta == nil {
			delete(want, c.key)
			continue
		}
		w := slices.DeleteFunc(want[c.key], func(t string) bool { return slices.Contains(c.delta.remove, t) })
		for _, t := range c.delta.add {
			if !slices.Contains(w, t) {
				w = append(w, t)
			}
		}
		want[c.key] = w
	}
	for k, targets := range want {
		if len(targets) > 0 {
			names[k.Name] = true
		}
	}
	if len(names) == 0 {
		return nil
	}
	state, err := p.current(ctx, zoneID, names)
	if err != nil {
		return nil
	}
	for _, k := range slices.SortedFunc(maps.Keys(want), func(a, b provider.RecordSetKey) int { return strings.Compare(a.String(), b.String()) }) {
		var have []string
		if cur := state[k]; cur != nil {
			have = cur.Targets
		}
		var lost []string
		for _, t := range want[k] {
			// Case-blind: a server that changes the case of hex or names in what it stores
			// (canonically the same record) must not make every write look lost.
			if !slices.ContainsFunc(have, func(h string) bool { return strings.EqualFold(h, t) }) {
				lost = append(lost, t)
			}
		}
		if len(lost) > 0 {
			return fmt.Errorf("%s: %s added by this write missing at a read after it (a concurrent write replaced the set; PowerDNS has no conditional write): %w",
				k, strings.Join(lost, ", "), provider.ErrConflict)
		}
	}
	return nil
}

// change is one validated change: the rrset to send as is, and, for a
// change applied by read-merge-write, its delta.
type change struct {
	key   provider.RecordSetKey // canonical
	rrset apiRRSet              // REPLACE of after, or DELETE
	after *provider.RecordSet   // canonical After; nil for a Delete
	delta *delta                // nil: send rrset as is
	// claim: a Create of a record set (not a registry record), which needs the
	// set absent at PowerDNS (see merge).
	claim bool
}

// delta is a change expressed as targets to add and remove (canonical).
type delta struct {
	add, remove []string
	// ttl is After's TTL; keep (a Delete) keeps the current TTL.
	ttl  int64
	keep bool
}

// merge returns the rrsets to PATCH for part: each change's own rrset, or,
// for changes with a delta, the delta applied onto the current set read now.
// The names of claims (Creates of record sets) and of changes with a delta
// are read first, in one GET (see current); a claim whose set that read
// holds, and that no earlier change of part wrote, fails the whole call with
// an error wrapping provider.ErrConflict before anything is sent.
func (p *Provider) merge(ctx context.Context, zoneID string, part []change) ([]apiRRSet, error) {
	names := map[string]bool{}
	for _, c := range part {
		if c.delta != nil || c.claim {
			names[c.key.Name] = true
		}
	}
	out := make([]apiRRSet, len(part))
	if len(names) == 0 {
		for i, c := range part {
			out[i] = c.rrset
		}
		return out, nil
	}
	state, recent := p.claimState(zoneID, part)
	if !recent {
		var err error
		if state, err = p.current(ctx, zoneID, names); err != nil {
			return nil, err
		}
	}
	written := map[provider.RecordSetKey]bool{} // keys an earlier change of part wrote
	for i, c := range part {
		if cur := state[c.key]; c.claim && cur != nil && !written[c.key] {
			seen := strings.Join(cur.Targets, ", ")
			if recent {
				seen = fmt.Sprintf("in a read of the zone at most %s old", p.claimAge)
			}
			return nil, fmt.Errorf("create %s: the set exists at PowerDNS (%s), created after the read this write was planned from; PowerDNS has no conditional write, so the names a write creates are read before it: %w",
				c.key, seen, provider.ErrConflict)
		}
		written[c.key] = true
		if c.delta == nil {
			out[i] = c.rrset
			state[c.key] = c.after
			continue
		}
		next := applyDelta(state[c.key], c.key, *c.delta)
		state[c.key] = next
		if next == nil {
			out[i] = apiRRSet{Name: dnswire.Fqdn(c.key.Name), Type: c.key.Type, ChangeType: "DELETE"}
			continue
		}
		rs, err := toAPI(*next)
		if err != nil {
			// A current target this build cannot re-encode: write the
			// change as it came rather than fail it.
			out[i] = c.rrset
			state[c.key] = c.after
			continue
		}
		out[i] = rs
	}
	return out, nil
}

// current reads the zone's current sets at names, canonical, by key: one GET
// filtered with rrset_name (PowerDNS 4.7 and later) for a single name, else
// one GET of the whole zone. The result is filtered here too, so a server
// that ignores the filter is still read correctly.
func (p *Provider) current(ctx context.Context, zoneID string, names map[string]bool) (map[provider.RecordSetKey]*provider.RecordSet, error) {
	path := zonePath(zoneID)
	if len(names) == 1 {
		for name := range names {
			path += "?rrset_name=" + url.QueryEscape(dnswire.Fqdn(name))
		}
	}
	var z apiZone
	gen, at := p.readStarts(zoneID)
	if err := p.do(ctx, http.MethodGet, path, nil, &z); err != nil {
		return nil, fmt.Errorf("read current record sets: %w", err)
	}
	if len(names) != 1 && p.claimAge > 0 {
		p.remember(zoneID, gen, at, recordSets(z))
	}
	// Only the sets at names are converted: converting parses every record (miekg/dns), and a
	// check of a few thousand names in a zone of 10,000 sets would otherwise parse them all,
	// while the zone's one write slot waits.
	out := map[provider.RecordSetKey]*provider.RecordSet{}
	for _, rs := range z.RRSets {
		if !names[dnswire.Dotless(rs.Name)] {
			continue
		}
		if set, ok := fromAPI(rs); ok {
			out[set.Key()] = &set
		}
	}
	return out, nil
}

// applyDelta applies d to cur (nil: no set) and returns the resulting set,
// nil when no target remains. Current targets keep their order; added ones
// follow in d's order.
func applyDelta(cur *provider.RecordSet, key provider.RecordSetKey, d delta) *provider.RecordSet {
	out := provider.RecordSet{Name: key.Name, Type: key.Type, TTL: d.ttl}
	if cur != nil {
		if d.keep {
			out.TTL = cur.TTL
		}
		for _, t := range cur.Targets {
			if !slices.Contains(d.remove, t) && !slices.Contains(out.Targets, t) {
				out.Targets = append(out.Targets, t)
			}
		}
	}
	for _, t := range d.add {
		if !slices.Contains(out.Targets, t) {
			out.Targets = append(out.Targets, t)
		}
	}
	if len(out.Targets) == 0 {
		return nil
	}
	return &out
}

// merged reports whether a change to the set at key is applied by
// read-merge-write: a Shared change (provider.Change.Shared), not to a
// registry record, not to a single-valued type, and to a type whose targets
// this build parses (so they compare canonically).
func merged(shared bool, key provider.RecordSetKey) bool {
	if !shared {
		return false
	}
	switch key.Type {
	case "CNAME", "DNAME", "SOA":
		return false
	case "TXT":
		if provider.IsRegistryName(key.Name) {
			return false
		}
	}
	_, known := dns.StringToType[key.Type]
	return known
}

// newDelta returns the delta of a change whose canonical After (nil for a
// Delete) and raw Before (nil for a Create) are given, or nil when Before
// cannot be read canonically.
func newDelta(before, after *provider.RecordSet) *delta {
	var b []string
	if before != nil {
		c, err := provider.CanonicalRecordSet(*before)
		if err != nil {
			return nil
		}
		b = c.Targets
	}
	if after == nil {
		return &delta{remove: b, keep: true}
	}
	d := &delta{ttl: after.TTL}
	for _, t := range after.Targets {
		if !slices.Contains(b, t) {
			d.add = append(d.add, t)
		}
	}
	for _, t := range b {
		if !slices.Contains(after.Targets, t) {
			d.remove = append(d.remove, t)
		}
	}
	return d
}

// coalesce keeps, per (name, type), the last rrset change, at the position
// of the first.
func coalesce(in []apiRRSet) []apiRRSet {
	type key struct{ name, rtype string }
	idx := make(map[key]int, len(in))
	out := make([]apiRRSet, 0, len(in))
	for _, rs := range in {
		k := key{rs.Name, rs.Type}
		if i, ok := idx[k]; ok {
			out[i] = rs
			continue
		}
		idx[k] = len(out)
		out = append(out, rs)
	}
	return out
}

// checkSet is the SideCheck of PowerDNS: After canonical in full; Before by its key only (a
// Delete or Update addresses the set by key, and its targets may be of a type this build cannot
// parse: ALIAS, LUA); inside zone, not the SOA (PowerDNS's), no weighted routing.
func checkSet(zone, which string, rs provider.RecordSet) (provider.RecordSet, error) {
	var c provider.RecordSet
	var err error
	if which == "After" {
		c, err = provider.CanonicalRecordSet(rs)
	} else {
		c = rs.Clone()
		c.Name, err = provider.ValidateName(rs.Name)
		c.Type = strings.ToUpper(strings.TrimSpace(rs.Type))
		if err == nil && c.Type == "" {
			err = fmt.Errorf("%w: %s: empty record type", provider.ErrInvalidChange, c.Name)
		}
	}
	if err != nil {
		return provider.RecordSet{}, err
	}
	if err := provider.CheckInZone(zone, c, "PowerDNS"); err != nil {
		return provider.RecordSet{}, err
	}
	if c.Weight != nil || c.SetIdentifier != "" {
		return provider.RecordSet{}, fmt.Errorf("%w: %s: PowerDNS has no weighted routing or set identifiers", provider.ErrNotCapable, c.Key())
	}
	return c, nil
}

// prepare converts one validated change (its sides checked by checkSet): a Create or Update is a
// REPLACE of After (at least one target), a Delete a DELETE by key; a Shared change to a merged
// key (see merged) also carries its delta.
func prepare(ch provider.Change) (change, error) {
	if ch.Action == provider.ActionDelete {
		before := *ch.Before
		c := change{key: before.Key(), rrset: apiRRSet{Name: dnswire.Fqdn(before.Name), Type: before.Type, ChangeType: "DELETE"}}
		if merged(ch.Shared, c.key) {
			c.delta = newDelta(&before, nil)
		}
		return c, nil
	}
	after := *ch.After
	if len(after.Targets) == 0 {
		return change{}, fmt.Errorf("%w: %s has no targets (delete it instead)", provider.ErrInvalidChange, after.Key())
	}
	rs, err := toAPI(after)
	if err != nil {
		return change{}, err
	}
	c := change{key: after.Key(), rrset: rs, after: &after, claim: ch.Action == provider.ActionCreate && !provider.IsRegistryName(after.Name)}
	if merged(ch.Shared, c.key) {
		c.delta = newDelta(ch.Before, &after)
	}
	return c, nil
}

// ClaimReadMaxAge is Config.ClaimReadMaxAge, as New took it.
func (p *Provider) ClaimReadMaxAge() time.Duration { return p.claimAge }

// claimState returns, when every name part reads is a claim's (no change
// applied by read-merge-write) and the zone has a whole-zone read at most
// Config.ClaimReadMaxAge old, the claims' sets present in that read (with
// this provider's writes since), with recent true; the sets carry no
// targets. Otherwise it returns recent false, and the caller reads.
func (p *Provider) claimState(zoneID string, part []change) (state map[provider.RecordSetKey]*provider.RecordSet, recent bool) {
	if p.claimAge <= 0 {
		return nil, false
	}
	for _, c := range part {
		if c.delta != nil {
			return nil, false
		}
	}
	zone := dnswire.Dotless(zoneID)
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.recent[zone]
	if r == nil || time.Since(r.at) > p.claimAge {
		delete(p.recent, zone)
		return nil, false
	}
	state = map[provider.RecordSetKey]*provider.RecordSet{}
	for _, c := range part {
		if _, ok := r.keys[c.key]; c.claim && ok {
			state[c.key] = &provider.RecordSet{Name: c.key.Name, Type: c.key.Type}
		}
	}
	return state, true
}

// readStarts returns the zone's write generation and the time, for a
// whole-zone read about to be sent (see remember).
func (p *Provider) readStarts(zoneID string) (uint64, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.patches[dnswire.Dotless(zoneID)], time.Now()
}

// remember keeps the keys of sets, a whole-zone read sent at at, for
// claimState, unless a write to the zone was sent or answered since the read
// was sent (its generation moved: the read may or may not hold the write).
// Reads older than Config.ClaimReadMaxAge are dropped here, for every zone.
func (p *Provider) remember(zoneID string, gen uint64, at time.Time, sets []provider.RecordSet) {
	if p.claimAge <= 0 {
		return
	}
	zone := dnswire.Dotless(zoneID)
	keys := make(map[provider.RecordSetKey]struct{}, len(sets))
	for _, rs := range sets {
		keys[rs.Key()] = struct{}{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for z, r := range p.recent {
		if time.Since(r.at) > p.claimAge {
			delete(p.recent, z)
		}
	}
	if p.patches[zone] != gen {
		return
	}
	if r := p.recent[zone]; r != nil && r.at.After(at) {
		return
	}
	p.recent[zone] = &recentRead{at: at, keys: keys}
}

// writing moves the zone's write generation before a PATCH is sent, so that
// a read overlapping it is not remembered.
func (p *Provider) writing(zoneID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.patches[dnswire.Dotless(zoneID)]++
}

// wrote applies a PATCH that succeeded (part, and the rrsets merge made of
// it, index for index) to the zone's remembered read, and moves the zone's
// write generation.
func (p *Provider) wrote(zoneID string, part []change, rrsets []apiRRSet) {
	zone := dnswire.Dotless(zoneID)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.patches[zone]++
	r := p.recent[zone]
	if r == nil {
		return
	}
	for i, c := range part {
		if rrsets[i].ChangeType == "DELETE" {
			delete(r.keys, c.key)
		} else {
			r.keys[c.key] = struct{}{}
		}
	}
}

// forget drops the zone's remembered read (a write whose outcome is not
// known, a zone deleted) and moves its write generation.
func (p *Provider) forget(zoneID string) {
	zone := dnswire.Dotless(zoneID)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.patches[zone]++
	delete(p.recent, zone)
}
