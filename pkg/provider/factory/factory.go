package factory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnsplane/dnsplane/pkg/provider"
	awsprovider "github.com/dnsplane/dnsplane/pkg/provider/aws"
	azureprovider "github.com/dnsplane/dnsplane/pkg/provider/azure"
	"github.com/dnsplane/dnsplane/pkg/provider/counting"
	googleprovider "github.com/dnsplane/dnsplane/pkg/provider/google"
	"github.com/dnsplane/dnsplane/pkg/provider/guard"
	"github.com/dnsplane/dnsplane/pkg/provider/pdns"
	"github.com/dnsplane/dnsplane/pkg/provider/rfc2136"
	"github.com/dnsplane/dnsplane/pkg/provider/webhook"
)

// Secret types, one per provider (docs/api.md).
const (
	TypeLocal   corev1.SecretType = "dnsplane.io/local"
	TypePDNS    corev1.SecretType = "dnsplane.io/pdns"
	TypeRFC2136 corev1.SecretType = "dnsplane.io/rfc2136"
	TypeAWS     corev1.SecretType = "dnsplane.io/aws"
	TypeGoogle  corev1.SecretType = "dnsplane.io/google"
	TypeAzure   corev1.SecretType = "dnsplane.io/azure"
	TypeWebhook corev1.SecretType = "dnsplane.io/webhook"
)

// secretTypes lists every provider Secret type, in full, for error messages: "dnsplane.io/local,
// dnsplane.io/pdns, ...".
func secretTypes() string {
	types := []corev1.SecretType{TypeLocal, TypePDNS, TypeRFC2136, TypeAWS, TypeGoogle, TypeAzure, TypeWebhook}
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}

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
//   - PowerDNS, RFC 2136, external-dns webhooks and the embedded server: unlimited; they are the
//     user's own servers (a webhook in front of a rate-limited cloud API sets RATE_LIMIT_QPS).
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

// KeyPDNSClaimReadMaxAge, of dnsplane.io/pdns Secrets, is pdns.Config.ClaimReadMaxAge: how old
// (a Go duration, "0s" to "1m") a read of the zone may be for a write that creates record sets
// to check their absence against it instead of a GET of its own; default
// pdns.DefaultClaimReadMaxAge (0s: a GET before every such write); longer only for zones no
// other writer touches.
const KeyPDNSClaimReadMaxAge = "PDNS_CLAIM_READ_MAX_AGE"

// KeyPDNSMaxRequestBytes, of dnsplane.io/pdns Secrets, is pdns.Config.MaxRequestBytes: the most
// bytes of rrset JSON one PATCH carries, a whole number from 10000 up; default
// pdns.DefaultMaxRequestBytes (1,500,000, under PowerDNS's default webserver-max-bodysize of 2
// MB). Set it below the server's webserver-max-bodysize when that is lower.
const KeyPDNSMaxRequestBytes = "PDNS_MAX_REQUEST_BYTES"

// Keys of dnsplane.io/webhook Secrets (an external-dns webhook provider; docs/api.md).
const (
	// KeyWebhookURL is the webhook's root URL (webhook.Config.URL), e.g. http://127.0.0.1:8888
	// for a sidecar of the manager's pod. Required.
	KeyWebhookURL = "WEBHOOK_URL"
	// KeyWebhookHeaders holds headers sent with every request to the webhook, one "Name: value"
	// per line (blank lines and lines starting with '#' ignored; a name may repeat). Their values
	// are credentials (ConfidentialKeys).
	KeyWebhookHeaders = "WEBHOOK_HEADERS"
	// KeyWebhookBatchSize is the most record-set changes one POST /records carries, a whole
	// number >= 1 (webhook.Config.BatchSize); default webhook.DefaultBatchSize (1000).
	KeyWebhookBatchSize = "WEBHOOK_BATCH_SIZE"
)

// KeyDNSAddress (host:port), accepted by every Secret type, is where SOA checks and name-server
// queries for the provider's zones go instead of the zones' own name servers on port 53.
const KeyDNSAddress = "DNS_ADDRESS"

// KeySecondaryAddresses (a comma list of host:port), of dnsplane.io/local, dnsplane.io/pdns and
// dnsplane.io/rfc2136 Secrets, names the zones' secondaries that the Served check asks besides
// the primary (docs/served.md); the embedded server's --local-notify targets are asked anyway.
const KeySecondaryAddresses = "SECONDARY_ADDRESSES"

var (
	// ErrProviderNotFound: the Secret is missing, or its type names no provider of this build
	// (provider.ErrProviderNotFound, which the controllers test).
	ErrProviderNotFound = provider.ErrProviderNotFound
	// ErrInvalidCredentials: the Secret's keys are malformed. Providers return
	// provider.ErrInvalidCredentials for credentials they reject.
	ErrInvalidCredentials = provider.ErrInvalidCredentials
)

// DefaultReread is how long a zone writer's provider (ResolveAccount) is reused before the
// writer's next call reads its Secret again, when Factory.Reread is 0: at most one Secret read
// per account per second, however many writers flush (docs/design.md, "Provider Secrets").
const DefaultReread = time.Second

// DefaultResolveReread is how long Resolve (reconciles) reuses a provider before its next use
// reads the Secret again, when Factory.ResolveReread is 0: an edit that changes nothing the zone
// writers call (DNS_ADDRESS, SECONDARY_ADDRESSES: where SOA checks go) reaches the DNSZone's
// next check within this, instead of at the manager's restart. One Secret GET per Secret per
// 30 s at most, shared by every reconcile.
const DefaultResolveReread = 30 * time.Second

// Factory resolves provider Secrets. Its exported fields are read-only after construction; it is
// safe for concurrent use.
//
// It reads a Secret by name (a GET; no list, no watch, no cache of Secrets) and memoises the
// provider built from it. Reconciles (Resolve) use the memoised provider and read nothing; zone
// writers (ResolveAccount, before each provider call) read the Secret again when their provider
// is older than Reread, so a rotation reaches the next write; and a provider that rejects its
// credentials (provider.ErrInvalidCredentials) makes the next use of either read it again.
type Factory struct {
	// Client reads Secrets by name, uncached (the manager's API reader): the manager holds
	// only get on Secrets.
	Client client.Reader
	// Local is the dnsplane.io/local provider, the embedded server's store.
	Local provider.Provider
	// LocalAddr is the embedded server's host:port, the DNS address of local zones.
	LocalAddr string
	// LocalNotify are --local-notify's host:port, the embedded zones' secondaries, which the
	// Served check asks after LocalAddr (provider.Resolved.ServedBy).
	LocalNotify []string
	// Resolver is --dns-resolver: the DNS address when neither the provider nor DNS_ADDRESS
	// gives one; empty means the zones' own name servers.
	Resolver string
	// Requests, when set, counts every API request of the providers it builds:
	// dnsplane_provider_requests_total{provider,operation,code} (counting.NewMetrics).
	Requests *counting.Metrics
	// Webhook, when set, counts every HTTP request of the webhook providers it builds:
	// dnsplane_webhook_requests_total{method,path,code} (webhook.NewMetrics). One provider call
	// may cost several.
	Webhook *webhook.Metrics
	// ZoneListTTL is how long a provider's ListZones answer is reused; 0 = DefaultZoneListTTL,
	// negative = not cached.
	ZoneListTTL time.Duration
	// Reread is how long ResolveAccount reuses a provider before it reads the Secret again, a
	// time.Duration; 0 = DefaultReread, negative = every call.
	Reread time.Duration
	// ResolveReread is how long Resolve reuses a provider before it reads the Secret again, a
	// time.Duration; 0 = DefaultResolveReread, negative = every call.
	ResolveReread time.Duration
	// RequestTimeout (--provider-request-timeout) bounds each HTTP request of the PowerDNS,
	// Route 53, Cloud DNS, Azure DNS and webhook providers it builds, reply body included, a
	// time.Duration; 0 = each provider's default (30 s). A request that hangs past it fails
	// and is retried like any transient error, instead of holding its zone writer's call
	// (zonewriter.Options.CallTimeout, 2 min).
	RequestTimeout time.Duration

	mu       sync.Mutex
	cache    map[client.ObjectKey]*memo
	reads    map[client.ObjectKey]*read // Secret reads in flight, shared by concurrent callers
	limiters map[string]*rate.Limiter   // credential fingerprint -> the credential set's budget
}

// memo is the provider built from one version of a Secret.
type memo struct {
	resourceVersion string
	res             provider.Resolved
	readAt          time.Time // when the Secret was last read and found at resourceVersion
	// rejected, when set, is the error of a call the provider refused with these credentials:
	// the next use reads the Secret again and, while it is unchanged, returns this error
	// without calling the provider.
	rejected error
}

type read struct {
	done chan struct{}
	res  provider.Resolved
	err  error
}

// Resolve returns the provider of the Secret namespace/name: the memoised one, with no API
// request, unless it was never read, its credentials were rejected, or it was read longer than
// ResolveReread ago, in which case the Secret is read (concurrent callers share one read; an
// unchanged resourceVersion keeps the provider). Errors wrap ErrProviderNotFound (missing Secret,
// unknown or unbuilt type) or ErrInvalidCredentials (malformed keys, or credentials the
// provider rejected and the Secret still holds); messages name keys, never values. The
// provider's own ErrInvalidCredentials errors name the Secret and its credential keys too.
func (f *Factory) Resolve(ctx context.Context, namespace, name string) (provider.Resolved, error) {
	key := client.ObjectKey{Namespace: namespace, Name: name}
	if m, ok := f.lookup(key); ok && m.rejected == nil && time.Since(m.readAt) < f.resolveReread() {
		return m.res, nil
	}
	return f.read(ctx, key)
}

func (f *Factory) resolveReread() time.Duration {
	if f.ResolveReread == 0 {
		return DefaultResolveReread
	}
	return f.ResolveReread
}

// ResolveAccount returns the provider of account, a provider.Resolved.Account
// ("<namespace>/<secret name>"), as Resolve does, except that a provider older than Reread is
// checked against the Secret first (one GET; a rebuild only when its resourceVersion changed).
// It is the zone writers' resolver (zonewriter.Options.Resolve), so that a rotated Secret
// reaches every writer of the account at its next call after Reread. Errors are Resolve's, or
// wrap ErrProviderNotFound for a malformed account.
func (f *Factory) ResolveAccount(ctx context.Context, account string) (provider.Provider, error) {
	namespace, name, ok := strings.Cut(account, "/")
	if !ok || namespace == "" || name == "" {
		return nil, fmt.Errorf("account %q is not namespace/name: %w", account, ErrProviderNotFound)
	}
	key := client.ObjectKey{Namespace: namespace, Name: name}
	if m, ok := f.lookup(key); ok && m.rejected == nil && time.Since(m.readAt) < f.reread() {
		return m.res.Provider, nil
	}
	res, err := f.read(ctx, key)
	if err != nil {
		return nil, err
	}
	return res.Provider, nil
}

func (f *Factory) reread() time.Duration {
	if f.Reread == 0 {
		return DefaultReread
	}
	return f.Reread
}

// lookup returns a copy of key's memo.
func (f *Factory) lookup(key client.ObjectKey) (memo, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.cache[key]
	if !ok {
		return memo{}, false
	}
	return *m, true
}

// secretReadTimeout bounds one shared Secret read (and the provider build that follows it).
const secretReadTimeout = 30 * time.Second

// read reads the Secret key once for every concurrent caller (readOnce); a caller whose ctx
// ends stops waiting, with ctx's error.
func (f *Factory) read(ctx context.Context, key client.ObjectKey) (provider.Resolved, error) {
	f.mu.Lock()
	if r, ok := f.reads[key]; ok {
		f.mu.Unlock()
		select {
		case <-r.done:
			return r.res, r.err
		case <-ctx.Done():
			return provider.Resolved{}, ctx.Err()
		}
	}
	r := &read{done: make(chan struct{})}
	if f.reads == nil {
		f.reads = map[client.ObjectKey]*read{}
	}
	f.reads[key] = r
	f.mu.Unlock()
	// The read is shared: one caller's cancellation must not fail the others.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), secretReadTimeout)
	r.res, r.err = f.readOnce(rctx, key)
	cancel()
	f.mu.Lock()
	delete(f.reads, key)
	f.mu.Unlock()
	close(r.done)
	return r.res, r.err
}

// readOnce GETs the Secret and returns the memoised provider when its resourceVersion is
// unchanged (or the memoised rejection), else builds and memoises a new one. A Secret that is
// missing or malformed is not memoised: the next use reads it again.
func (f *Factory) readOnce(ctx context.Context, key client.ObjectKey) (provider.Resolved, error) {
	var s corev1.Secret
	// client-go logs response bodies at V(8): for a Secret that is its data. Read it with a
	// logger that drops everything, so that no verbosity ever prints a credential.
	if err := f.Client.Get(logr.NewContext(ctx, logr.Discard()), key, &s); err != nil {
		if apierrors.IsNotFound(err) {
			f.forget(key)
			return provider.Resolved{}, fmt.Errorf("secret %s/%s does not exist: %w", key.Namespace, key.Name, ErrProviderNotFound)
		}
		return provider.Resolved{}, fmt.Errorf("read secret %s/%s: %w", key.Namespace, key.Name, err)
	}
	now := time.Now()
	f.mu.Lock()
	if m, ok := f.cache[key]; ok && m.resourceVersion == s.ResourceVersion {
		m.readAt = now
		res, rejected := m.res, m.rejected
		f.mu.Unlock()
		if rejected != nil {
			return provider.Resolved{}, rejected
		}
		return res, nil
	}
	f.mu.Unlock()
	res, err := f.resolve(ctx, &s)
	if err != nil {
		f.forget(key)
		return provider.Resolved{}, err
	}
	f.mu.Lock()
	if f.cache == nil {
		f.cache = map[client.ObjectKey]*memo{}
	}
	f.cache[key] = &memo{resourceVersion: s.ResourceVersion, res: res, readAt: now}
	f.mu.Unlock()
	return res, nil
}

func (f *Factory) forget(key client.ObjectKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.cache, key)
}

// reject records err, a call's provider.ErrInvalidCredentials, against the Secret key at
// resourceVersion rv; a memo of a newer version is left alone.
func (f *Factory) reject(key client.ObjectKey, rv string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m, ok := f.cache[key]; ok && m.resourceVersion == rv && m.rejected == nil {
		m.rejected = err
	}
}

// resolve builds the provider of Secret s.
func (f *Factory) resolve(ctx context.Context, s *corev1.Secret) (provider.Resolved, error) {
	namespace, name := s.Namespace, s.Name
	r := provider.Resolved{Account: namespace + "/" + name, DNSAddress: f.Resolver, Backend: Backend(s)}
	if v, ok := s.Data[KeyDNSAddress]; ok {
		addr := strings.TrimSpace(string(v))
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return provider.Resolved{}, fmt.Errorf("secret %s/%s: key %s must be host:port: %w", namespace, name, KeyDNSAddress, ErrInvalidCredentials)
		}
		r.DNSAddress = addr
	}
	res, err := f.build(ctx, s, r)
	if err != nil {
		return res, err
	}
	if res.ServedBy, err = f.servedBy(s, res.DNSAddress); err != nil {
		return provider.Resolved{}, fmt.Errorf("secret %s/%s: %w", namespace, name, err)
	}
	res.SerialMayStay = s.Type == TypePDNS
	res.SignedByServer = s.Type == TypeRFC2136 || s.Type == TypeWebhook
	if s.Type == TypeLocal {
		return res, nil
	}
	opts, err := f.guardOptions(s)
	if err != nil {
		return provider.Resolved{}, fmt.Errorf("secret %s/%s: %w", namespace, name, err)
	}
	res.Provider = guard.New(counting.Wrap(res.Provider, strings.TrimPrefix(string(s.Type), "dnsplane.io/"), f.Requests), opts)
	// A rejected credential names its Secret and keys (docs/runbooks.md, InvalidCredentials),
	// and makes the next use read the Secret again.
	key, rv := client.ObjectKeyFromObject(s), s.ResourceVersion
	res.Provider = &namedCredentials{inner: res.Provider, hint: credentialHint(s),
		rejected: func(err error) { f.reject(key, rv, err) }}
	// The signers are the wrapped provider's, through the same guard, counting and credential
	// hints as its record writes (provider.SignerSource).
	res.KeySigner, res.Signer = provider.KeySignerOf(res.Provider), provider.ManagedSignerOf(res.Provider)
	res.KSKRoller = provider.KSKRollerOf(res.Provider)
	return res, nil
}

// build returns r with the provider of the Secret's type.
func (f *Factory) build(ctx context.Context, s *corev1.Secret, r provider.Resolved) (provider.Resolved, error) {
	namespace, name := s.Namespace, s.Name
	switch s.Type {
	case TypeLocal:
		if f.Local == nil {
			return provider.Resolved{}, fmt.Errorf("secret %s/%s: the embedded DNS server is not running: %w", namespace, name, ErrProviderNotFound)
		}
		r.Provider = f.Local
		if _, ok := s.Data[KeyDNSAddress]; !ok {
			r.DNSAddress = f.LocalAddr
		}
		return r, nil
	case TypePDNS:
		p, err := pdnsFromSecret(s, f.RequestTimeout)
		if err != nil {
			return provider.Resolved{}, fmt.Errorf("secret %s/%s: %w", namespace, name, err)
		}
		r.Provider = p
		return r, nil
	case TypeRFC2136:
		p, err := rfc2136FromSecret(s)
		if err != nil {
			return provider.Resolved{}, fmt.Errorf("secret %s/%s: %w", namespace, name, err)
		}
		r.Provider = p
		return r, nil
	case TypeAWS:
		get := func(k string) string { return strings.TrimSpace(string(s.Data[k])) }
		p, err := awsprovider.New(ctx, awsprovider.Config{
			AccessKeyID: get("AWS_ACCESS_KEY_ID"), SecretAccessKey: get("AWS_SECRET_ACCESS_KEY"),
			Region: get("AWS_REGION"), RoleARN: get("AWS_ROLE_ARN"), EndpointURL: get("AWS_ENDPOINT_URL"),
			PrivateZoneVPCID: get("AWS_PRIVATE_ZONE_VPC_ID"), PrivateZoneVPCRegion: get("AWS_PRIVATE_ZONE_VPC_REGION"),
			Timeout: f.RequestTimeout, DNSSECKMSKeyARN: get("AWS_DNSSEC_KMS_KEY_ARN"), DNSSECRolloverKMSKeyARN: get("AWS_DNSSEC_ROLLOVER_KMS_KEY_ARN"),
		})
		if err != nil {
			return provider.Resolved{}, fmt.Errorf("secret %s/%s: Route 53 settings: %w", namespace, name, err)
		}
		// The Served check asks Route 53's GetChange, the unwrapped provider's (its calls are
		// one per pending change and check: docs/served.md).
		r.Provider, r.ChangeSync = p, p
		return r, nil
	case TypeAzure:
		get := func(k string) string { return strings.TrimSpace(string(s.Data[k])) }
		p, err := azureprovider.New(ctx, azureprovider.Config{
			SubscriptionID: get("AZURE_SUBSCRIPTION_ID"), ResourceGroup: get("AZURE_RESOURCE_GROUP"),
			TenantID: get("AZURE_TENANT_ID"), ClientID: get("AZURE_CLIENT_ID"), ClientSecret: get("AZURE_CLIENT_SECRET"),
			EndpointURL: get("AZURE_ENDPOINT_URL"), AuthorityHost: get("AZURE_AUTHORITY_HOST"),
			TryTimeout: f.RequestTimeout,
		})
		if err != nil {
			return provider.Resolved{}, fmt.Errorf("secret %s/%s: Azure DNS settings: %w", namespace, name, err)
		}
		r.Provider = p
		return r, nil
	case TypeGoogle:
		get := func(k string) string { return strings.TrimSpace(string(s.Data[k])) }
		if get("GOOGLE_PROJECT_ID") == "" {
			return provider.Resolved{}, fmt.Errorf("secret %s/%s: key GOOGLE_PROJECT_ID is required: %w", namespace, name, ErrInvalidCredentials)
		}
		p, err := googleprovider.New(ctx, googleprovider.Config{
			ProjectID: get("GOOGLE_PROJECT_ID"), CredentialsJSON: get("GOOGLE_APPLICATION_CREDENTIALS_JSON"),
			EndpointURL: get("GOOGLE_ENDPOINT_URL"), Timeout: f.RequestTimeout,
		})
		if err != nil {
			return provider.Resolved{}, fmt.Errorf("secret %s/%s: Cloud DNS settings: %w", namespace, name, err)
		}
		r.Provider = p
		return r, nil
	case TypeWebhook:
		p, err := webhookFromSecret(s, f.RequestTimeout, f.Webhook)
		if err != nil {
			return provider.Resolved{}, fmt.Errorf("secret %s/%s: %w", namespace, name, err)
		}
		r.Provider = p
		return r, nil
	default:
		return provider.Resolved{}, fmt.Errorf("secret %s/%s: type %q is not a dnsplane provider type (want one of %s): %w", namespace, name, s.Type, secretTypes(), ErrProviderNotFound)
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

// servedBy returns the name servers the Served check asks for the zones of Secret s, whose
// DNS address is dnsAddr: for the embedded server, pdns and rfc2136 (whose SOA serial moves on
// every write: RFC 2136 §3.7, PowerDNS's SOA-EDIT-API) the primary, then the --local-notify
// targets (embedded) and KeySecondaryAddresses; none for another type, or a pdns or rfc2136
// Secret without DNS_ADDRESS (its primary's address is not known). A malformed
// KeySecondaryAddresses item is an error wrapping ErrInvalidCredentials that names the key.
func (f *Factory) servedBy(s *corev1.Secret, dnsAddr string) ([]string, error) {
	var out []string
	switch s.Type {
	case TypeLocal:
		out = append([]string{loopbackIfUnspecified(dnsAddr)}, f.LocalNotify...)
	case TypePDNS, TypeRFC2136:
		if _, ok := s.Data[KeyDNSAddress]; !ok {
			return nil, nil
		}
		out = []string{dnsAddr}
	default:
		return nil, nil
	}
	for item := range strings.SplitSeq(string(s.Data[KeySecondaryAddresses]), ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if host, port, err := net.SplitHostPort(item); err != nil || host == "" || port == "" {
			return nil, fmt.Errorf("key %s: %q is not host:port: %w", KeySecondaryAddresses, item, ErrInvalidCredentials)
		}
		if !slices.Contains(out, item) {
			out = append(out, item)
		}
	}
	return out, nil
}

// loopbackIfUnspecified turns a listener's unspecified host (0.0.0.0, [::]: the chart's
// --local-dns-addr) into 127.0.0.1, where the same server answers, so that conditions name an
// address one can ask; any other address is returned as it is.
func loopbackIfUnspecified(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// fingerprint identifies a credential set without holding it: a SHA-256 over the Secret's type,
// its keys and values (DNS_ADDRESS aside, which is not a credential) and the limit, so that two
// Secrets with the same credentials share one limiter, and an edited Secret gets a new one.
func fingerprint(s *corev1.Secret, qps float64, burst int) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%g\x00%d", s.Type, qps, burst)
	for _, k := range slices.Sorted(maps.Keys(s.Data)) {
		if k == KeyDNSAddress || k == KeySecondaryAddresses {
			continue
		}
		fmt.Fprintf(h, "\x00%s=%x", k, s.Data[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// pdnsFromSecret builds the PowerDNS provider from a dnsplane.io/pdns Secret (docs/api.md):
// PDNS_API_URL and PDNS_API_KEY, optional PDNS_SERVER_ID, PDNS_NAMESERVERS (a comma list) and
// KeyPDNSMaxWritesInFlight, KeyPDNSClaimReadMaxAge and KeyPDNSMaxRequestBytes. Errors wrap ErrInvalidCredentials and
// name keys, never values.
func pdnsFromSecret(s *corev1.Secret, timeout time.Duration) (provider.Provider, error) {
	get := func(k string) string { return strings.TrimSpace(string(s.Data[k])) }
	cfg := pdns.Config{APIURL: get("PDNS_API_URL"), APIKey: get("PDNS_API_KEY"), ServerID: get("PDNS_SERVER_ID"), Timeout: timeout}
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
	if v := get(KeyPDNSMaxRequestBytes); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10000 {
			return nil, fmt.Errorf("key %s must be a whole number >= 10000: %w", KeyPDNSMaxRequestBytes, ErrInvalidCredentials)
		}
		cfg.MaxRequestBytes = n
	}
	cfg.ClaimReadMaxAge = pdns.DefaultClaimReadMaxAge
	if v := get(KeyPDNSClaimReadMaxAge); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > time.Minute {
			return nil, fmt.Errorf("key %s must be a duration from 0s to 1m: %w", KeyPDNSClaimReadMaxAge, ErrInvalidCredentials)
		}
		cfg.ClaimReadMaxAge = d
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

// webhookFromSecret builds the external-dns webhook provider from a dnsplane.io/webhook Secret
// (docs/api.md): KeyWebhookURL, optional KeyWebhookHeaders and KeyWebhookBatchSize; timeout is
// each request's bound (0: webhook.DefaultTimeout); m, when set, counts its requests. Errors
// wrap ErrInvalidCredentials and name keys and header names, never a header value.
func webhookFromSecret(s *corev1.Secret, timeout time.Duration, m *webhook.Metrics) (provider.Provider, error) {
	get := func(k string) string { return strings.TrimSpace(string(s.Data[k])) }
	cfg := webhook.Config{URL: get(KeyWebhookURL), Timeout: timeout, Metrics: m}
	if cfg.URL == "" {
		return nil, fmt.Errorf("key %s is required: %w", KeyWebhookURL, ErrInvalidCredentials)
	}
	headers, err := parseHeaders(string(s.Data[KeyWebhookHeaders]))
	if err != nil {
		return nil, err
	}
	cfg.Headers = headers
	if v := get(KeyWebhookBatchSize); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("key %s must be a whole number >= 1: %w", KeyWebhookBatchSize, ErrInvalidCredentials)
		}
		cfg.BatchSize = n
	}
	p, err := webhook.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("webhook settings: %w", err)
	}
	return p, nil
}

// parseHeaders reads KeyWebhookHeaders: one "Name: value" per line, blank lines and lines
// starting with '#' ignored, spaces around names and values trimmed. A line without a name and
// a colon is an error wrapping ErrInvalidCredentials that gives its number, never its text (it
// holds a credential).
func parseHeaders(raw string) (http.Header, error) {
	h := http.Header{}
	for i, line := range strings.Split(raw, "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if name = strings.TrimSpace(name); !ok || name == "" {
			return nil, fmt.Errorf("key %s: line %d is not \"Name: value\": %w", KeyWebhookHeaders, i+1, ErrInvalidCredentials)
		}
		h.Add(name, strings.TrimSpace(value))
	}
	return h, nil
}
