package factory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnsplane/dnsplane/pkg/provider"
	awsprovider "github.com/dnsplane/dnsplane/pkg/provider/aws"
	azureprovider "github.com/dnsplane/dnsplane/pkg/provider/azure"
	"github.com/dnsplane/dnsplane/pkg/provider/counting"
	googleprovider "github.com/dnsplane/dnsplane/pkg/provider/google"
	"github.com/dnsplane/dnsplane/pkg/provider/guard"
	"github.com/dnsplane/dnsplane/pkg/provider/pdns"
	"github.com/dnsplane/dnsplane/pkg/provider/rfc2136"
)

// Secret types, one per provider (docs/api.md).
const (
	TypeLocal   corev1.SecretType = "dnsplane.io/local"
	TypePDNS    corev1.SecretType = "dnsplane.io/pdns"
	TypeRFC2136 corev1.SecretType = "dnsplane.io/rfc2136"
	TypeAWS     corev1.SecretType = "dnsplane.io/aws"
	TypeGoogle  corev1.SecretType = "dnsplane.io/google"
	TypeAzure   corev1.SecretType = "dnsplane.io/azure"
)

// Rate-limit keys, accepted by every Secret type but dnsplane.io/local: the client-side request
// budget of the credential set, shared by every DNSZone whose Secret holds the same credentials.
const (
	// KeyRateLimitQPS is requests per second, a decimal number; 0 = unlimited. Default
	// DefaultQPS of the Secret's type.
	KeyRateLimitQPS = "RATE_LIMIT_QPS"
	// KeyRateLimitBurst is the most requests sent at once after a pause; default ceil(QPS).
	KeyRateLimitBurst = "RATE_LIMIT_BURST"
)

// DefaultQPS is the client-side request rate per credential set when the Secret does not set
// RATE_LIMIT_QPS, in requests per second; 0 = unlimited.
//   - Route 53: 5 requests per second per AWS account (Route 53 Developer Guide, "Quotas on API
//     requests").
//   - Azure DNS: 10 per second, below Azure Resource Manager's per-subscription write refill rate
//     (Azure docs, "Understand how Azure Resource Manager throttles requests").
//   - Cloud DNS: 10 per second, well under the per-project API quota (Cloud DNS "Quotas").
//   - PowerDNS, RFC 2136 and the embedded server: unlimited; they are the user's own servers.
func DefaultQPS(t corev1.SecretType) float64 {
	switch t {
	case TypeAWS:
		return 5
	case TypeAzure, TypeGoogle:
		return 10
	}
	return 0
}

// DefaultZoneListTTL is how long a provider's zone list is reused when Factory.ZoneListTTL is 0.
const DefaultZoneListTTL = 30 * time.Second

// KeyPDNSMaxWritesInFlight, of dnsplane.io/pdns Secrets, is how many PATCHes the zone writers
// of the Secret send the server at once (pdns.Config.MaxWritesInFlight); default 1, since the
// sqlite backend takes one write at a time. Raise it for a backend that takes concurrent writes.
const KeyPDNSMaxWritesInFlight = "PDNS_MAX_WRITES_IN_FLIGHT"

// KeyDNSAddress (host:port), accepted by every Secret type, is where SOA checks and name-server
// queries for the provider's zones go instead of the zones' own name servers on port 53.
const KeyDNSAddress = "DNS_ADDRESS"

var (
	// ErrProviderNotFound: the Secret is missing, or its type names no provider of this build.
	ErrProviderNotFound = errors.New("provider not found")
	// ErrInvalidCredentials: the Secret's keys are malformed. Providers return
	// provider.ErrInvalidCredentials for credentials they reject.
	ErrInvalidCredentials = provider.ErrInvalidCredentials
)

// Resolved is a provider ready for use.
type Resolved struct {
	// Provider talks to the DNS API.
	Provider provider.Provider
	// Account identifies the provider account for zone writers: "<namespace>/<secret name>".
	Account string
	// DNSAddress is host:port for SOA and NS queries of this provider's zones; empty means the
	// zones' own name servers on port 53.
	DNSAddress string
}

// Factory resolves provider Secrets. Its exported fields are read-only after construction; it is
// safe for concurrent use.
type Factory struct {
	// Client reads whole Secrets; the API reader (no cache) keeps the manager from caching every
	// Secret's data.
	Client client.Reader
	// Metadata, when set, reads Secrets' metadata from the manager's cache; a Secret whose
	// resourceVersion did not change is then resolved from memory, with no API call.
	Metadata client.Reader
	// Local is the dnsplane.io/local provider, the embedded server's store.
	Local provider.Provider
	// LocalAddr is the embedded server's host:port, the DNS address of local zones.
	LocalAddr string
	// Resolver is --dns-resolver: the DNS address when neither the provider nor DNS_ADDRESS
	// gives one; empty means the zones' own name servers.
	Resolver string
	// Requests, when set, counts every API request of the providers it builds:
	// dnsplane_provider_requests_total{provider,operation,code} (counting.NewMetrics).
	Requests *counting.Metrics
	// ZoneListTTL is how long a provider's ListZones answer is reused; 0 = DefaultZoneListTTL,
	// negative = not cached.
	ZoneListTTL time.Duration

	mu       sync.Mutex
	cache    map[client.ObjectKey]cached
	limiters map[string]*rate.Limiter // credential fingerprint -> the credential set's budget
}

type cached struct {
	resourceVersion string
	res             Resolved
	err             error
}

// Resolve reads the Secret namespace/name and returns its provider. Errors wrap
// ErrProviderNotFound (missing Secret, unknown or unbuilt type) or ErrInvalidCredentials
// (malformed keys); messages name keys, never values. The provider's own ErrInvalidCredentials
// errors (credentials the backend rejects) name the Secret and its credential keys too.
func (f *Factory) Resolve(ctx context.Context, namespace, name string) (Resolved, error) {
	key := client.ObjectKey{Namespace: namespace, Name: name}
	if f.Metadata == nil {
		res, _, err := f.resolve(ctx, namespace, name)
		return res, err
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := f.Metadata.Get(ctx, key, m); err == nil {
		f.mu.Lock()
		c, ok := f.cache[key]
		f.mu.Unlock()
		if ok && c.resourceVersion == m.ResourceVersion {
			return c.res, c.err
		}
	}
	res, rv, err := f.resolve(ctx, namespace, name)
	if rv != "" {
		f.mu.Lock()
		if f.cache == nil {
			f.cache = map[client.ObjectKey]cached{}
		}
		f.cache[key] = cached{resourceVersion: rv, res: res, err: err}
		f.mu.Unlock()
	}
	return res, err
}

// ResolveAccount returns the provider of account, a Resolved.Account ("<namespace>/<secret
// name>"), as Resolve does: from memory while the Secret's resourceVersion is unchanged (with
// Metadata), else built from the Secret as it is now. It is the zone writers' resolver
// (zonewriter.Options.Resolve), so that a rotated Secret reaches every writer of the account at
// its next call. Errors are Resolve's, or wrap ErrProviderNotFound for a malformed account.
func (f *Factory) ResolveAccount(ctx context.Context, account string) (provider.Provider, error) {
	namespace, name, ok := strings.Cut(account, "/")
	if !ok || namespace == "" || name == "" {
		return nil, fmt.Errorf("account %q is not namespace/name: %w", account, ErrProviderNotFound)
	}
	res, err := f.Resolve(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return res.Provider, nil
}

// resolve reads the Secret and builds its provider; rv is the Secret's resourceVersion, empty
// when it could not be read.
func (f *Factory) resolve(ctx context.Context, namespace, name string) (_ Resolved, rv string, _ error) {
	var s corev1.Secret
	// client-go logs response bodies at V(8): for a Secret that is its data. Read it with a
	// logger that drops everything, so that no verbosity ever prints a credential.
	if err := f.Client.Get(logr.NewContext(ctx, logr.Discard()), client.ObjectKey{Namespace: namespace, Name: name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return Resolved{}, "", fmt.Errorf("secret %s/%s does not exist: %w", namespace, name, ErrProviderNotFound)
		}
		return Resolved{}, "", fmt.Errorf("read secret %s/%s: %w", namespace, name, err)
	}
	r := Resolved{Account: namespace + "/" + name, DNSAddress: f.Resolver}
	if v, ok := s.Data[KeyDNSAddress]; ok {
		addr := strings.TrimSpace(string(v))
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return Resolved{}, s.ResourceVersion, fmt.Errorf("secret %s/%s: key %s must be host:port: %w", namespace, name, KeyDNSAddress, ErrInvalidCredentials)
		}
		r.DNSAddress = addr
	}
	res, err := f.build(ctx, &s, r)
	if err != nil || s.Type == TypeLocal {
		return res, s.ResourceVersion, err
	}
	opts, err := f.guardOptions(&s)
	if err != nil {
		return Resolved{}, s.ResourceVersion, fmt.Errorf("secret %s/%s: %w", namespace, name, err)
	}
	res.Provider = guard.New(counting.Wrap(res.Provider, strings.TrimPrefix(string(s.Type), "dnsplane.io/"), f.Requests), opts)
	// A rejected credential names its Secret and keys (docs/runbooks.md, InvalidCredentials).
	res.Provider = namedCredentials{inner: res.Provider, hint: credentialHint(&s)}
	return res, s.ResourceVersion, nil
}

// build returns r with the provider of the Secret's type.
func (f *Factory) build(ctx context.Context, s *corev1.Secret, r Resolved) (Resolved, error) {
	namespace, name := s.Namespace, s.Name
	switch s.Type {
	case TypeLocal:
		if f.Local == nil {
			return Resolved{}, fmt.Errorf("secret %s/%s: the embedded DNS server is not running: %w", namespace, name, ErrProviderNotFound)
		}
		r.Provider = f.Local
		if _, ok := s.Data[KeyDNSAddress]; !ok {
			r.DNSAddress = f.LocalAddr
		}
		return r, nil
	case TypePDNS:
		p, err := pdnsFromSecret(s)
		if err != nil {
			return Resolved{}, fmt.Errorf("secret %s/%s: %w", namespace, name, err)
		}
		r.Provider = p
		return r, nil
	case TypeRFC2136:
		p, err := rfc2136FromSecret(s)
		if err != nil {
			return Resolved{}, fmt.Errorf("secret %s/%s: %w", namespace, name, err)
		}
		r.Provider = p
		return r, nil
	case TypeAWS:
		get := func(k string) string { return strings.TrimSpace(string(s.Data[k])) }
		p, err := awsprovider.New(ctx, awsprovider.Config{
			AccessKeyID: get("AWS_ACCESS_KEY_ID"), SecretAccessKey: get("AWS_SECRET_ACCESS_KEY"),
			Region: get("AWS_REGION"), RoleARN: get("AWS_ROLE_ARN"), EndpointURL: get("AWS_ENDPOINT_URL"),
			PrivateZoneVPCID: get("AWS_PRIVATE_ZONE_VPC_ID"), PrivateZoneVPCRegion: get("AWS_PRIVATE_ZONE_VPC_REGION"),
		})
		if err != nil {
			return Resolved{}, fmt.Errorf("secret %s/%s: Route 53 settings: %w", namespace, name, err)
		}
		r.Provider = p
		return r, nil
	case TypeAzure:
		get := func(k string) string { return strings.TrimSpace(string(s.Data[k])) }
		p, err := azureprovider.New(ctx, azureprovider.Config{
			SubscriptionID: get("AZURE_SUBSCRIPTION_ID"), ResourceGroup: get("AZURE_RESOURCE_GROUP"),
			TenantID: get("AZURE_TENANT_ID"), ClientID: get("AZURE_CLIENT_ID"), ClientSecret: get("AZURE_CLIENT_SECRET"),
			EndpointURL: get("AZURE_ENDPOINT_URL"), AuthorityHost: get("AZURE_AUTHORITY_HOST"),
		})
		if err != nil {
			return Resolved{}, fmt.Errorf("secret %s/%s: Azure DNS settings: %w", namespace, name, err)
		}
		r.Provider = p
		return r, nil
	case TypeGoogle:
		get := func(k string) string { return strings.TrimSpace(string(s.Data[k])) }
		if get("GOOGLE_PROJECT_ID") == "" {
			return Resolved{}, fmt.Errorf("secret %s/%s: key GOOGLE_PROJECT_ID is required: %w", namespace, name, ErrInvalidCredentials)
		}
		p, err := googleprovider.New(ctx, googleprovider.Config{
			ProjectID: get("GOOGLE_PROJECT_ID"), CredentialsJSON: get("GOOGLE_APPLICATION_CREDENTIALS_JSON"),
			EndpointURL: get("GOOGLE_ENDPOINT_URL"),
		})
		if err != nil {
			return Resolved{}, fmt.Errorf("secret %s/%s: Cloud DNS settings: %w", namespace, name, err)
		}
		r.Provider = p
		return r, nil
	default:
		return Resolved{}, fmt.Errorf("secret %s/%s: type %q is not a dnsplane provider type (want one of dnsplane.io/local, pdns, rfc2136, aws, google, azure): %w", namespace, name, s.Type, ErrProviderNotFound)
	}
}

// guardOptions returns the guard of the Secret's credential set: its shared limiter (Secret keys
// RATE_LIMIT_QPS and RATE_LIMIT_BURST, else DefaultQPS) and the zone-list TTL. Errors wrap
// ErrInvalidCredentials and name keys, never values.
func (f *Factory) guardOptions(s *corev1.Secret) (guard.Options, error) {
	qps, burst := DefaultQPS(s.Type), 0
	if v := strings.TrimSpace(string(s.Data[KeyRateLimitQPS])); v != "" {
		q, err := strconv.ParseFloat(v, 64)
		if err != nil || q < 0 || math.IsInf(q, 0) || math.IsNaN(q) {
			return guard.Options{}, fmt.Errorf("key %s must be a number of requests per second >= 0: %w", KeyRateLimitQPS, ErrInvalidCredentials)
		}
		qps = q
	}
	if v := strings.TrimSpace(string(s.Data[KeyRateLimitBurst])); v != "" {
		b, err := strconv.Atoi(v)
		if err != nil || b < 1 {
			return guard.Options{}, fmt.Errorf("key %s must be a whole number >= 1: %w", KeyRateLimitBurst, ErrInvalidCredentials)
		}
		burst = b
	}
	ttl := f.ZoneListTTL
	if ttl == 0 {
		ttl = DefaultZoneListTTL
	}
	opts := guard.Options{ZoneListTTL: max(ttl, 0)}
	if qps == 0 {
		return opts, nil
	}
	key := fingerprint(s, qps, burst)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.limiters == nil {
		f.limiters = map[string]*rate.Limiter{}
	}
	if f.limiters[key] == nil {
		f.limiters[key] = guard.NewLimiter(qps, burst)
	}
	opts.Limiter = f.limiters[key]
	return opts, nil
}

// fingerprint identifies a credential set without holding it: a SHA-256 over the Secret's type,
// its keys and values (DNS_ADDRESS aside, which is not a credential) and the limit, so that two
// Secrets with the same credentials share one limiter, and an edited Secret gets a new one.
func fingerprint(s *corev1.Secret, qps float64, burst int) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%g\x00%d", s.Type, qps, burst)
	for _, k := range slices.Sorted(maps.Keys(s.Data)) {
		if k == KeyDNSAddress {
			continue
		}
		fmt.Fprintf(h, "\x00%s=%x", k, s.Data[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// pdnsFromSecret builds the PowerDNS provider from a dnsplane.io/pdns Secret (docs/api.md):
// PDNS_API_URL and PDNS_API_KEY, optional PDNS_SERVER_ID, PDNS_NAMESERVERS (a comma list) and
// KeyPDNSMaxWritesInFlight. Errors wrap ErrInvalidCredentials and name keys, never values.
func pdnsFromSecret(s *corev1.Secret) (provider.Provider, error) {
	get := func(k string) string { return strings.TrimSpace(string(s.Data[k])) }
	cfg := pdns.Config{APIURL: get("PDNS_API_URL"), APIKey: get("PDNS_API_KEY"), ServerID: get("PDNS_SERVER_ID")}
	if cfg.APIURL == "" || cfg.APIKey == "" {
		return nil, fmt.Errorf("keys PDNS_API_URL and PDNS_API_KEY are required: %w", ErrInvalidCredentials)
	}
	for _, ns := range strings.Split(get("PDNS_NAMESERVERS"), ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			cfg.Nameservers = append(cfg.Nameservers, ns)
		}
	}
	if v := get(KeyPDNSMaxWritesInFlight); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("key %s must be a whole number >= 1: %w", KeyPDNSMaxWritesInFlight, ErrInvalidCredentials)
		}
		cfg.MaxWritesInFlight = n
	}
	p, err := pdns.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("PowerDNS settings: %w", err)
	}
	return p, nil
}

// rfc2136FromSecret builds the RFC 2136 provider from a dnsplane.io/rfc2136 Secret (docs/api.md):
// RFC2136_HOST, RFC2136_PORT, RFC2136_TSIG_KEYNAME, RFC2136_TSIG_SECRET and optional
// RFC2136_TSIG_ALGORITHM (default hmac-sha256). Errors wrap ErrInvalidCredentials and name keys,
// never values.
func rfc2136FromSecret(s *corev1.Secret) (provider.Provider, error) {
	get := func(k string) string { return strings.TrimSpace(string(s.Data[k])) }
	cfg := rfc2136.Config{Host: get("RFC2136_HOST"), KeyName: get("RFC2136_TSIG_KEYNAME"),
		Secret: get("RFC2136_TSIG_SECRET"), Algorithm: get("RFC2136_TSIG_ALGORITHM")}
	if cfg.Host == "" || cfg.KeyName == "" || cfg.Secret == "" {
		return nil, fmt.Errorf("keys RFC2136_HOST, RFC2136_TSIG_KEYNAME and RFC2136_TSIG_SECRET are required: %w", ErrInvalidCredentials)
	}
	if v := get("RFC2136_PORT"); v != "" {
		port, err := strconv.Atoi(v)
		if err != nil || port <= 0 || port > 65535 {
			return nil, fmt.Errorf("key RFC2136_PORT must be a port number: %w", ErrInvalidCredentials)
		}
		cfg.Port = port
	}
	p, err := rfc2136.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("RFC 2136 settings: %w", err)
	}
	return p, nil
}
