// Package google is the dnsplane provider for Google Cloud DNS (Secret type
// dnsplane.io/google), over google.golang.org/api/dns/v1.
//
// Zones are public managed zones. The managed zone name is derived
// deterministically from the DNS name (ZoneName); the caller reference is
// kept in the label LabelCallerReference (sanitised, see CallerReferenceLabel)
// and verbatim in the description. EnsureZone never creates a second zone for
// a DNS name: a same-name zone without our label is ErrZoneConflict.
//
// ApplyChanges writes its changes as one changes.create (pkg/provider/guard
// splits larger writes by Capabilities) whose deletions are the exact Before
// sets and additions the After sets. Cloud DNS applies a
// change atomically and requires deletions to match existing data exactly,
// so a stale Before fails the whole batch: that is the conditional write.
//
// Geo sets (GeoRouting; docs/providers.md, "Geo on Route 53 and Cloud DNS") are written as one
// record set with a geo routing policy per name and type, its items Google Cloud regions
// (geotable.go), beside a companion TXT record set that lists the geo tags back (geo.go). Record
// sets with a routing policy dnsplane did not write are neither listed nor written.
package google

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/auth"

	dns "google.golang.org/api/dns/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// LabelCallerReference is the managed-zone label holding the sanitised
// caller reference.
const LabelCallerReference = "dnsplane-caller-reference"

// descriptionPrefix starts the description of zones we create; the caller
// reference follows verbatim.
const descriptionPrefix = "Managed by dnsplane; caller reference: "

// Cloud DNS per-change limits (cloud.google.com/dns/quotas, "Resource
// limits": additions per change 1,000; deletions per change 1,000; resource
// record data size per change 100,000 bytes; records per RR set 100).
const (
	maxAdditions   = 1000
	maxRrdataBytes = 100000
)

// DefaultTimeout bounds each API request when Config.Timeout is 0, as PowerDNS's
// (pdns.DefaultTimeout): a hung connection costs one request of this length, not the zone
// writer's whole call.
const DefaultTimeout = 30 * time.Second

// Config configures a Provider (Secret keys in brackets).
type Config struct {
	ProjectID       string // GOOGLE_PROJECT_ID (required)
	CredentialsJSON string // GOOGLE_APPLICATION_CREDENTIALS_JSON; else the default credential chain
	EndpointURL     string // GOOGLE_ENDPOINT_URL: API root override (tests, proxies), e.g. "http://127.0.0.1:8080/"
	// HTTPClient, when set, is used as is (it must add authentication
	// itself); CredentialsJSON and the default chain are then not used.
	HTTPClient *http.Client
	// ListPageSize is resourceRecordSets.list maxResults; 0 = server default.
	ListPageSize int64
	// Timeout bounds each API request, its reply body included, and each page of a list
	// (Cloud DNS's client does not retry; pkg/provider/guard does); 0 = DefaultTimeout.
	Timeout time.Duration
}

// Provider is a Cloud DNS provider.
type Provider struct {
	svc      *dns.Service
	project  string
	pageSize int64
	timeout  time.Duration
}

var (
	_ provider.Provider     = (*Provider)(nil)
	_ provider.ZoneDrainer  = (*Provider)(nil)
	_ provider.RequestSizer = (*Provider)(nil)
)

// New builds a Provider. It makes no API calls.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	if cfg.ProjectID == "" {
		return nil, fmt.Errorf("%w: GOOGLE_PROJECT_ID is required", provider.ErrInvalidCredentials)
	}
	var opts []option.ClientOption
	if cfg.EndpointURL != "" {
		ep := cfg.EndpointURL
		if !strings.HasSuffix(ep, "/") {
			ep += "/"
		}
		opts = append(opts, option.WithEndpoint(ep))
	}
	switch {
	case cfg.HTTPClient != nil:
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	case cfg.CredentialsJSON != "":
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(cfg.CredentialsJSON), &head); err != nil {
			return nil, fmt.Errorf("%w: GOOGLE_APPLICATION_CREDENTIALS_JSON is not JSON: %v", provider.ErrInvalidCredentials, err)
		}
		// Typed loading: only the credential types we expect are accepted.
		var t option.CredentialsType
		switch head.Type {
		case "service_account":
			t = option.ServiceAccount
		case "authorized_user":
			t = option.AuthorizedUser
		case "external_account":
			t = option.ExternalAccount
		default:
			return nil, fmt.Errorf("%w: unsupported credential type %q", provider.ErrInvalidCredentials, head.Type)
		}
		opts = append(opts, option.WithAuthCredentialsJSON(t, []byte(cfg.CredentialsJSON)), option.WithScopes(dns.NdevClouddnsReadwriteScope))
	default:
		opts = append(opts, option.WithScopes(dns.NdevClouddnsReadwriteScope))
	}
	svc, err := dns.NewService(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: creating Cloud DNS client: %v", provider.ErrInvalidCredentials, err)
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Provider{svc: svc, project: cfg.ProjectID, pageSize: cfg.ListPageSize, timeout: timeout}, nil
}

// Capabilities reports Cloud DNS's per-change limits (cloud.google.com/dns/quotas,
// "Resource limits": 1,000 additions, 1,000 deletions and 100,000 bytes of
// rrdata per change). MaxChangesPerBatch counts records, which is at least
// the number of sets Cloud DNS counts, and an Update as Before+After, so a
// batch of 1,000 elements never exceeds 1,000 additions nor 1,000 deletions;
// values are counted as sent (provider.ValueBytes: TXT quoted with \ddd
// escapes, names with their trailing dot), so no RequestSizer is needed for
// plain sets. GeoRouting: the geo sets of a name and type are one record set
// with a geo routing policy (geo.go); see RequestCost for what they cost.
func (p *Provider) Capabilities() provider.Capabilities {
	return provider.Capabilities{
		MaxChangesPerBatch:    maxAdditions,
		MaxValueBytesPerBatch: maxRrdataBytes,
		ConditionalWrites:     true,
		WeightedRouting:       false,
		GeoRouting:            true,
		CreateZones:           true,
		BatchWrites:           true,
	}
}

// ---- errors ----

func mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	// The token endpoint refused the service account (OAuth 2.0 error response, RFC 6749 §5.2:
	// 400 invalid_grant or invalid_client, 401): the credentials are wrong, not the request.
	var ae *auth.Error
	if errors.As(err, &ae) && ae.Response != nil && (ae.Response.StatusCode == http.StatusBadRequest ||
		ae.Response.StatusCode == http.StatusUnauthorized || ae.Response.StatusCode == http.StatusForbidden) {
		return fmt.Errorf("clouddns %s: token endpoint answered %d: %w", op, ae.Response.StatusCode, provider.ErrInvalidCredentials)
	}
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		return fmt.Errorf("clouddns %s: %w", op, err)
	}
	reason := ""
	if len(ge.Errors) > 0 {
		reason = ge.Errors[0].Reason
	}
	switch {
	case ge.Code == http.StatusTooManyRequests || reason == "rateLimitExceeded" || reason == "userRateLimitExceeded":
		te := &provider.ThrottledError{Err: err}
		if s, perr := strconv.Atoi(ge.Header.Get("Retry-After")); perr == nil && s > 0 {
			te.RetryAfter = time.Duration(s) * time.Second
		}
		return fmt.Errorf("clouddns %s: %w", op, te)
	case ge.Code == http.StatusNotFound && op == "changes.create" && strings.Contains(ge.Message, "entity.change.deletions"):
		// A deletion of a set that does not exist: the Before is stale.
		return fmt.Errorf("clouddns %s: %w: %w", op, provider.ErrConflict, err)
	case ge.Code == http.StatusForbidden && reason == "quotaExceeded":
		return fmt.Errorf("clouddns %s: %w: %w", op, provider.ErrInvalidChange, err)
	case provider.StatusError(ge.Code) != nil:
		return fmt.Errorf("clouddns %s: %w: %w", op, provider.StatusError(ge.Code), err)
	}
	return fmt.Errorf("clouddns %s: %w", op, err)
}

// ---- names ----

func hash8(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:4])
}

// sanitize lower-cases s and replaces every character outside [a-z0-9-]
// (and '_' when underscore) by '-'.
func sanitize(s string, underscore bool) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || underscore && c == '_') {
			b[i] = '-'
		}
	}
	return string(b)
}

// ZoneName is the managed zone name for a DNS name: "dnsplane-" plus the
// name with dots as dashes, cut to fit, and 8 hex digits of its SHA-256, so
// that it matches [a-z][-a-z0-9]* within 63 characters and distinct DNS
// names never share it.
func ZoneName(dnsName string) string {
	n := dnswire.Dotless(dnsName)
	base := "dnsplane-" + sanitize(n, false)
	if len(base) > 54 {
		base = base[:54]
	}
	return strings.TrimRight(base, "-") + "-" + hash8(n)
}

// CallerReferenceLabel is the label value for a caller reference: the
// reference itself when it is already a valid label value (lower-case
// [a-z0-9_-], at most 63), else its sanitised form cut to 54 characters plus
// 8 hex digits of its SHA-256.
func CallerReferenceLabel(ref string) string {
	s := sanitize(ref, true)
	if s == ref && len(s) <= 63 {
		return s
	}
	if len(s) > 54 {
		s = s[:54]
	}
	return s + "-" + hash8(ref)
}

// labelKey turns a tag key into a label key ([a-z][a-z0-9_-]{0,62}).
func labelKey(k string) string {
	s := sanitize(k, true)
	s = strings.Map(func(r rune) rune {
		if r == '-' {
			return '_'
		}
		return r
	}, s)
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		s = "t_" + s
	}
	if len(s) > 63 {
		s = s[:63]
	}
	return s
}

// ---- zones ----

func toZone(mz *dns.ManagedZone) provider.Zone {
	z := provider.Zone{ID: mz.Name, Name: dnswire.Dotless(mz.DnsName)}
	for _, ns := range mz.NameServers {
		z.NameServers = append(z.NameServers, dnswire.Dotless(ns))
	}
	if lbl, ok := mz.Labels[LabelCallerReference]; ok {
		z.CallerReference = lbl
		if ref, ok := strings.CutPrefix(mz.Description, descriptionPrefix); ok && CallerReferenceLabel(ref) == lbl {
			z.CallerReference = ref
		}
	}
	for k, v := range mz.Labels {
		if k == LabelCallerReference {
			continue
		}
		if z.Tags == nil {
			z.Tags = map[string]string{}
		}
		z.Tags[k] = v
	}
	return z
}

// ours reports whether mz was created for ref.
func ours(mz *dns.ManagedZone, ref string) bool {
	return mz.Labels[LabelCallerReference] == CallerReferenceLabel(ref)
}

func (p *Provider) getRaw(ctx context.Context, id string) (*dns.ManagedZone, error) {
	if id == "" {
		return nil, fmt.Errorf("%w: empty zone ID", provider.ErrZoneNotFound)
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	mz, err := p.svc.ManagedZones.Get(p.project, id).Context(ctx).Do()
	if err != nil {
		return nil, mapErr("managedZones.get", err)
	}
	return mz, nil
}

// GetZone returns a managed zone by name (or numeric ID).
func (p *Provider) GetZone(ctx context.Context, id string) (provider.Zone, error) {
	mz, err := p.getRaw(ctx, id)
	if err != nil {
		return provider.Zone{}, err
	}
	return toZone(mz), nil
}

func (p *Provider) listRawZones(ctx context.Context, dnsName string) ([]*dns.ManagedZone, error) {
	call := p.svc.ManagedZones.List(p.project)
	if dnsName != "" {
		call = call.DnsName(dnsName)
	}
	fetch := func(ctx context.Context, token string) (*dns.ManagedZonesListResponse, error) {
		return call.PageToken(token).Context(ctx).Do()
	}
	return listPages(ctx, p.timeout, "managedZones.list", fetch, func(r *dns.ManagedZonesListResponse) ([]*dns.ManagedZone, string) {
		return r.ManagedZones, r.NextPageToken
	})
}

// ListZones lists every managed zone of the project.
func (p *Provider) ListZones(ctx context.Context) ([]provider.Zone, error) {
	raw, err := p.listRawZones(ctx, "")
	if err != nil {
		return nil, err
	}
	out := make([]provider.Zone, 0, len(raw))
	for _, mz := range raw {
		out = append(out, toZone(mz))
	}
	return out, nil
}

// EnsureZone returns the public zone named spec.Name created for
// spec.CallerReference, creating it if there is none. A zone of that DNS
// name without our caller reference is ErrZoneConflict; a second zone is
// never created.
func (p *Provider) EnsureZone(ctx context.Context, spec provider.ZoneSpec) (provider.Zone, error) {
	name, err := provider.ValidateName(spec.Name)
	if err != nil {
		return provider.Zone{}, err
	}
	if spec.CallerReference == "" || len(spec.CallerReference) > 1024-len(descriptionPrefix) {
		return provider.Zone{}, fmt.Errorf("%w: caller reference must be 1..%d characters", provider.ErrInvalidChange, 1024-len(descriptionPrefix))
	}
	check := func() (provider.Zone, bool, error) {
		same, err := p.listRawZones(ctx, dnswire.Fqdn(name))
		if err != nil {
			return provider.Zone{}, false, err
		}
		for _, mz := range same {
			if dnswire.Fqdn(mz.DnsName) == dnswire.Fqdn(name) && ours(mz, spec.CallerReference) {
				return toZone(mz), true, nil
			}
		}
		for _, mz := range same {
			if dnswire.Fqdn(mz.DnsName) == dnswire.Fqdn(name) {
				return provider.Zone{}, false, fmt.Errorf("%w: managed zone %s (%s) already exists for another caller reference",
					provider.ErrZoneConflict, mz.Name, name)
			}
		}
		return provider.Zone{}, false, nil
	}
	if z, found, err := check(); err != nil || found {
		return z, err
	}
	labels := map[string]string{}
	for k, v := range spec.Tags {
		val := sanitize(v, true)
		if len(val) > 63 {
			val = val[:63]
		}
		labels[labelKey(k)] = val
	}
	labels[LabelCallerReference] = CallerReferenceLabel(spec.CallerReference)
	mz := &dns.ManagedZone{Name: ZoneName(name), DnsName: dnswire.Fqdn(name), Description: descriptionPrefix + spec.CallerReference,
		Labels: labels, Visibility: "public"}
	cctx, cancel := context.WithTimeout(ctx, p.timeout)
	created, err := p.svc.ManagedZones.Create(p.project, mz).Context(cctx).Do()
	cancel()
	if err != nil {
		var ge *googleapi.Error
		if errors.As(err, &ge) && ge.Code == http.StatusConflict {
			// Lost a race, or the derived name is taken by another zone.
			if z, found, cerr := check(); cerr != nil || found {
				return z, cerr
			}
			return provider.Zone{}, fmt.Errorf("%w: managed zone name %s is taken", provider.ErrZoneConflict, mz.Name)
		}
		return provider.Zone{}, mapErr("managedZones.create", err)
	}
	return toZone(created), nil
}

// DeleteZone deletes every record set but the apex SOA and NS (ZoneDeletions), as one
// changes.create, then the zone. Like ApplyChanges it never splits: under pkg/provider/guard
// (provider.ZoneDrainer) the sets are already deleted in batches within Cloud DNS's per-change
// limits, and this finds the zone empty.
func (p *Provider) DeleteZone(ctx context.Context, id string) error {
	mz, err := p.getRaw(ctx, id)
	if err != nil {
		return err
	}
	dels, err := p.deletions(ctx, mz)
	if err != nil {
		return err
	}
	if err := p.deleteSets(ctx, mz.Name, dels); err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	if err := p.svc.ManagedZones.Delete(p.project, mz.Name).Context(cctx).Do(); err != nil {
		return mapErr("managedZones.delete", err)
	}
	return nil
}

// ZoneDeletions implements provider.ZoneDrainer: every listed record set but the apex SOA and
// NS, as Raw a *dns.ResourceRecordSet to delete exactly (name, type, TTL and rrdata), each
// costing its records (at least one, which is at least the one set Cloud DNS counts against
// its 1,000 deletions) and its rrdata bytes as listed.
func (p *Provider) ZoneDeletions(ctx context.Context, id string) ([]provider.Deletion, error) {
	mz, err := p.getRaw(ctx, id)
	if err != nil {
		return nil, err
	}
	return p.deletions(ctx, mz)
}

func (p *Provider) deletions(ctx context.Context, mz *dns.ManagedZone) ([]provider.Deletion, error) {
	raw, err := p.listRaw(ctx, mz.Name)
	if err != nil {
		return nil, err
	}
	apex := dnswire.Fqdn(mz.DnsName)
	var dels []provider.Deletion
	for _, rr := range raw {
		if dnswire.Fqdn(rr.Name) == apex && (rr.Type == "SOA" || rr.Type == "NS") {
			continue
		}
		d := provider.Deletion{Key: provider.RecordSetKey{Name: dnswire.Dotless(rr.Name), Type: strings.ToUpper(rr.Type)},
			Raw: &dns.ResourceRecordSet{Name: rr.Name, Type: rr.Type, Ttl: rr.Ttl, Rrdatas: rr.Rrdatas, RoutingPolicy: rr.RoutingPolicy,
				ForceSendFields: []string{"Ttl"}}}
		n := len(rr.Rrdatas)
		for _, r := range rr.Rrdatas {
			d.ValueBytes += len(r)
		}
		if pol := rr.RoutingPolicy; pol != nil && pol.Geo != nil { // a geo set's records are its items'
			for _, it := range pol.Geo.Items {
				n += len(it.Rrdatas)
				for _, r := range it.Rrdatas {
					d.ValueBytes += len(r)
				}
			}
		}
		d.Elements = max(1, n)
		dels = append(dels, d)
	}
	return dels, nil
}

// DeleteRecordSets implements provider.ZoneDrainer: dels (of ZoneDeletions) as the deletions of
// one changes.create, atomic; nothing is sent for none.
func (p *Provider) DeleteRecordSets(ctx context.Context, id string, dels []provider.Deletion) error {
	if id == "" {
		return fmt.Errorf("%w: empty zone ID", provider.ErrZoneNotFound)
	}
	return p.deleteSets(ctx, id, dels) // changes.create takes the zone's name or ID
}

func (p *Provider) deleteSets(ctx context.Context, zone string, dels []provider.Deletion) error {
	if len(dels) == 0 {
		return nil
	}
	var g group
	for _, d := range dels {
		rr, ok := d.Raw.(*dns.ResourceRecordSet)
		if !ok || rr == nil {
			return fmt.Errorf("%w: deletion of %s is not a Cloud DNS record set (%T)", provider.ErrInvalidChange, d.Key, d.Raw)
		}
		g.deletions = append(g.deletions, rr)
	}
	return p.send(ctx, zone, g)
}

// RecordsPerPage is resourceRecordSets.list's maxResults, so that pkg/provider/guard charges its
// rate limiter one request per page; 0 when the server chooses the page size (not charged).
func (p *Provider) RecordsPerPage() int { return int(p.pageSize) }
