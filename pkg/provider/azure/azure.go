// Package azure is the dnsplane provider for Azure DNS public zones (Secret
// type dnsplane.io/azure), over the armdns (api-version 2018-05-01) and
// azidentity clients.
//
// Credentials: a ClientSecretCredential when TenantID, ClientID and
// ClientSecret are set, else DefaultAzureCredential (environment, workload
// identity, managed identity, Azure CLI). Bearer tokens are sent over TLS
// only (azcore refuses plain HTTP), so EndpointURL must be https.
//
// Zone IDs are zone names within the configured resource group. EnsureZone is
// idempotent by the zone tag TagCallerReference and creates with
// If-None-Match: *, so it never overwrites a zone; a same-name zone without
// our tag value is ErrZoneConflict. DeleteZone is a long-running operation
// and is polled until it completes.
//
// Azure DNS has no batch API: every Change is its own request, one PUT
// (Create, Update) or DELETE (Delete) per record set, so a call with n
// changes costs n writes against the ARM write throttle of the subscription,
// plus its reads (one GET per touched set, or one paged list of the zone
// when more than getThreshold sets are touched). Writes are conditional:
// Create sends If-None-Match: *, Update and Delete send If-Match with the
// ETag read in the same ApplyChanges call, after Before was compared with
// that read. All preconditions of a call are checked before its first
// write, so a stale Before fails the call with nothing written; a
// concurrent writer between that read and a write gives 412, ErrConflict,
// and the earlier changes of the call stay applied.
package azure

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/dns/armdns"
	"k8s.io/utils/ptr"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// TagCallerReference is the zone tag holding the ZoneSpec's caller
// reference. (Azure tag names cannot contain '/'; see sanitizeTag.)
const TagCallerReference = "dnsplane-caller-reference"

// getThreshold: up to this many touched record sets are read with one GET
// each before writing; more are read with one paged list of the zone.
const getThreshold = 16

// DefaultTryTimeout bounds each HTTP attempt when Config.TryTimeout is 0, as PowerDNS's
// (pdns.DefaultTimeout): a hung connection costs one attempt of this length, not the zone
// writer's whole call.
const DefaultTryTimeout = 30 * time.Second

// Config configures a Provider (Secret keys in brackets).
type Config struct {
	SubscriptionID string // AZURE_SUBSCRIPTION_ID (required)
	ResourceGroup  string // AZURE_RESOURCE_GROUP (required)
	TenantID       string // AZURE_TENANT_ID
	ClientID       string // AZURE_CLIENT_ID
	ClientSecret   string // AZURE_CLIENT_SECRET: with TenantID and ClientID, a client secret credential
	EndpointURL    string // AZURE_ENDPOINT_URL: ARM endpoint (default https://management.azure.com)
	AuthorityHost  string // AZURE_AUTHORITY_HOST: Entra ID authority (default public cloud)
	// Transport sends the HTTP requests (an *http.Client satisfies it); nil =
	// azcore's default.
	Transport policy.Transporter
	// MaxRetries bounds azcore's retries (429, 5xx); 0 = azcore default (3),
	// negative = none.
	MaxRetries int32
	// MaxRetryDelay caps a retry wait; a Retry-After above it is not waited
	// for but returned as a ThrottledError. 0 = azcore default (60 s).
	MaxRetryDelay time.Duration
	// ListPageSize is the $top of record-set and zone lists; 0 = 100.
	ListPageSize int32
	// PollFrequency is the long-running delete's poll interval; 0 = 2 s.
	PollFrequency time.Duration
	// TryTimeout bounds each HTTP attempt, its reply body included, token requests too
	// (azcore's RetryOptions.TryTimeout; an attempt that timed out is retried up to
	// MaxRetries); 0 = DefaultTryTimeout.
	TryTimeout time.Duration
}

// Provider is an Azure DNS provider.
type Provider struct {
	zones *armdns.ZonesClient
	sets  *armdns.RecordSetsClient
	rg    string
	top   int32
	poll  time.Duration
}

var _ provider.Provider = (*Provider)(nil)

// New builds a Provider. It makes no API calls.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	_ = ctx
	if cfg.SubscriptionID == "" || cfg.ResourceGroup == "" {
		return nil, fmt.Errorf("%w: AZURE_SUBSCRIPTION_ID and AZURE_RESOURCE_GROUP are required", provider.ErrInvalidCredentials)
	}
	if cfg.ClientSecret != "" && (cfg.TenantID == "" || cfg.ClientID == "") {
		return nil, fmt.Errorf("%w: AZURE_CLIENT_SECRET needs AZURE_TENANT_ID and AZURE_CLIENT_ID", provider.ErrInvalidCredentials)
	}
	cl := cloud.AzurePublic
	cl.Services = map[cloud.ServiceName]cloud.ServiceConfiguration{cloud.ResourceManager: cloud.AzurePublic.Services[cloud.ResourceManager]}
	if cfg.EndpointURL != "" {
		if !strings.HasPrefix(strings.ToLower(cfg.EndpointURL), "https://") {
			return nil, fmt.Errorf("%w: AZURE_ENDPOINT_URL must be https (bearer tokens are sent over TLS only)", provider.ErrInvalidCredentials)
		}
		rm := cl.Services[cloud.ResourceManager]
		rm.Endpoint = strings.TrimSuffix(cfg.EndpointURL, "/")
		cl.Services[cloud.ResourceManager] = rm
	}
	if cfg.AuthorityHost != "" {
		cl.ActiveDirectoryAuthorityHost = cfg.AuthorityHost
	}
	tryTimeout := cfg.TryTimeout
	if tryTimeout <= 0 {
		tryTimeout = DefaultTryTimeout
	}
	co := azcore.ClientOptions{Cloud: cl, Transport: cfg.Transport,
		Retry: policy.RetryOptions{MaxRetries: cfg.MaxRetries, MaxRetryDelay: cfg.MaxRetryDelay, TryTimeout: tryTimeout}}
	// A custom authority (sovereign cloud, test fake) is not in Entra ID's
	// instance-discovery list.
	custom := cfg.AuthorityHost != ""
	var (
		cred azcore.TokenCredential
		err  error
	)
	if cfg.ClientSecret != "" {
		cred, err = azidentity.NewClientSecretCredential(cfg.TenantID, cfg.ClientID, cfg.ClientSecret,
			&azidentity.ClientSecretCredentialOptions{ClientOptions: co, DisableInstanceDiscovery: custom})
	} else {
		cred, err = azidentity.NewDefaultAzureCredential(&azidentity.DefaultAzureCredentialOptions{ClientOptions: co,
			TenantID: cfg.TenantID, DisableInstanceDiscovery: custom})
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", provider.ErrInvalidCredentials, err)
	}
	opts := &arm.ClientOptions{ClientOptions: co}
	zones, err := armdns.NewZonesClient(cfg.SubscriptionID, cred, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", provider.ErrInvalidCredentials, err)
	}
	sets, err := armdns.NewRecordSetsClient(cfg.SubscriptionID, cred, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", provider.ErrInvalidCredentials, err)
	}
	p := &Provider{zones: zones, sets: sets, rg: cfg.ResourceGroup, top: cfg.ListPageSize, poll: cfg.PollFrequency}
	if p.top <= 0 {
		p.top = 100
	}
	if p.poll <= 0 {
		p.poll = 2 * time.Second
	}
	return p, nil
}

// Capabilities: no batches (one PUT/DELETE per record set), ETag
// conditional writes, no weighted routing.
func (p *Provider) Capabilities() provider.Capabilities {
	return provider.Capabilities{ConditionalWrites: true, CreateZones: true}
}

// ---- errors ----

func mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("azure %s: %w", op, err)
	}
	var authErr *azidentity.AuthenticationFailedError
	if errors.As(err, &authErr) {
		return fmt.Errorf("azure %s: %w: %w", op, provider.ErrInvalidCredentials, err)
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		if re.StatusCode == http.StatusTooManyRequests {
			var ra time.Duration
			if re.RawResponse != nil {
				ra = retryAfter(re.RawResponse.Header)
			}
			return fmt.Errorf("azure %s: %w", op, &provider.ThrottledError{RetryAfter: ra, Err: err})
		}
		if typed := provider.StatusError(re.StatusCode); typed != nil {
			return fmt.Errorf("azure %s: %w: %w", op, typed, err)
		}
	}
	return fmt.Errorf("azure %s: %w", op, err)
}

func isNotFound(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusNotFound
}

// retryAfter reads Retry-After (seconds or HTTP date) and ARM's
// retry-after-ms / x-ms-retry-after-ms.
func retryAfter(h http.Header) time.Duration {
	for _, k := range []string{"retry-after-ms", "x-ms-retry-after-ms"} {
		if v := h.Get(k); v != "" {
			var ms int64
			if _, err := fmt.Sscan(v, &ms); err == nil && ms > 0 {
				return time.Duration(ms) * time.Millisecond
			}
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	var sec int64
	if _, err := fmt.Sscan(v, &sec); err == nil && sec > 0 {
		return time.Duration(sec) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, time.Until(t))
	}
	return 0
}

// ---- zones ----

// zoneName accepts a zone name or an ARM zone resource ID.
func zoneName(id string) string {
	if i := strings.LastIndex(strings.ToLower(id), "/dnszones/"); i >= 0 {
		id = id[i+len("/dnszones/"):]
	}
	return dnswire.Dotless(id)
}

func toZone(z *armdns.Zone) provider.Zone {
	out := provider.Zone{ID: dnswire.Dotless(deref(z.Name)), Name: dnswire.Dotless(deref(z.Name))}
	if z.Properties != nil {
		for _, n := range z.Properties.NameServers {
			out.NameServers = append(out.NameServers, dnswire.Dotless(deref(n)))
		}
	}
	for k, v := range z.Tags {
		if k == TagCallerReference {
			out.CallerReference = deref(v)
			continue
		}
		if out.Tags == nil {
			out.Tags = map[string]string{}
		}
		out.Tags[k] = deref(v)
	}
	return out
}

// deref is *p, or T's zero value for a nil p.
func deref[T any](p *T) T { return ptr.Deref(p, *new(T)) }

// GetZone returns the zone by name (or ARM resource ID).
func (p *Provider) GetZone(ctx context.Context, id string) (provider.Zone, error) {
	name := zoneName(id)
	if name == "" {
		return provider.Zone{}, fmt.Errorf("%w: empty zone ID", provider.ErrZoneNotFound)
	}
	resp, err := p.zones.Get(ctx, p.rg, name, nil)
	if err != nil {
		return provider.Zone{}, mapErr("Zones.Get", err)
	}
	return toZone(&resp.Zone), nil
}

// ListZones lists the zones of the resource group.
func (p *Provider) ListZones(ctx context.Context) ([]provider.Zone, error) {
	var out []provider.Zone
	pager := p.zones.NewListByResourceGroupPager(p.rg, &armdns.ZonesClientListByResourceGroupOptions{Top: &p.top})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, mapErr("Zones.ListByResourceGroup", err)
		}
		for _, z := range page.Value {
			if z != nil {
				out = append(out, toZone(z))
			}
		}
	}
	return out, nil
}

// sanitizeTag replaces the characters Azure forbids in tag names
// (< > % & \ ? /) with '_'.
func sanitizeTag(k string) string {
	return strings.Map(func(r rune) rune {
		if strings.ContainsRune(`<>%&\?/`, r) {
			return '_'
		}
		return r
	}, k)
}

// EnsureZone returns the zone tagged with spec.CallerReference, creating it
// (If-None-Match: *) when no zone of that name exists.
func (p *Provider) EnsureZone(ctx context.Context, spec provider.ZoneSpec) (provider.Zone, error) {
	name, err := provider.ValidateName(spec.Name)
	if err != nil {
		return provider.Zone{}, err
	}
	if spec.CallerReference == "" || len(spec.CallerReference) > 256 {
		return provider.Zone{}, fmt.Errorf("%w: caller reference must be 1..256 characters", provider.ErrInvalidChange)
	}
	for attempt := 0; ; attempt++ {
		resp, err := p.zones.Get(ctx, p.rg, name, nil)
		if err == nil {
			z := toZone(&resp.Zone)
			if z.CallerReference != spec.CallerReference {
				return provider.Zone{}, fmt.Errorf("%w: Azure DNS zone %s exists in resource group %s with caller reference %q",
					provider.ErrZoneConflict, name, p.rg, z.CallerReference)
			}
			return z, nil
		}
		if !isNotFound(err) {
			return provider.Zone{}, mapErr("Zones.Get", err)
		}
		tags := map[string]*string{TagCallerReference: &spec.CallerReference}
		for k, v := range spec.Tags {
			if sk := sanitizeTag(k); sk != TagCallerReference {
				tags[sk] = &v
			}
		}
		loc, star := "global", "*"
		created, err := p.zones.CreateOrUpdate(ctx, p.rg, name, armdns.Zone{Location: &loc, Tags: tags,
			Properties: &armdns.ZoneProperties{ZoneType: toPtr(armdns.ZoneTypePublic)}},
			&armdns.ZonesClientCreateOrUpdateOptions{IfNoneMatch: &star})
		if err == nil {
			return toZone(&created.Zone), nil
		}
		var re *azcore.ResponseError
		if errors.As(err, &re) && re.StatusCode == http.StatusPreconditionFailed && attempt == 0 {
			continue // created concurrently: read it and check its tag
		}
		if errors.As(err, &re) && re.StatusCode == http.StatusConflict {
			return provider.Zone{}, fmt.Errorf("%w: %w", provider.ErrZoneConflict, err)
		}
		return provider.Zone{}, mapErr("Zones.CreateOrUpdate", err)
	}
}

func toPtr[T any](v T) *T { return &v }

// DeleteZone deletes the zone (with all its record sets) and waits for the
// long-running operation to finish.
func (p *Provider) DeleteZone(ctx context.Context, id string) error {
	name := zoneName(id)
	if name == "" {
		return fmt.Errorf("%w: empty zone ID", provider.ErrZoneNotFound)
	}
	if _, err := p.zones.Get(ctx, p.rg, name, nil); err != nil {
		return mapErr("Zones.Get", err)
	}
	poller, err := p.zones.BeginDelete(ctx, p.rg, name, nil)
	if err != nil {
		return mapErr("Zones.Delete", err)
	}
	if _, err := poller.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: p.poll}); err != nil {
		return mapErr("Zones.Delete (polling)", err)
	}
	return nil
}

// RecordsPerPage is the record-set list's $top, so that pkg/provider/guard charges its rate
// limiter one request per nextLink page.
func (p *Provider) RecordsPerPage() int { return int(p.top) }
