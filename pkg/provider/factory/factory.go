package factory

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnsplane/dnsplane/pkg/provider"
	awsprovider "github.com/dnsplane/dnsplane/pkg/provider/aws"
	azureprovider "github.com/dnsplane/dnsplane/pkg/provider/azure"
	googleprovider "github.com/dnsplane/dnsplane/pkg/provider/google"
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

	mu    sync.Mutex
	cache map[client.ObjectKey]cached
}

type cached struct {
	resourceVersion string
	res             Resolved
	err             error
}

// Resolve reads the Secret namespace/name and returns its provider. Errors wrap
// ErrProviderNotFound (missing Secret, unknown or unbuilt type) or ErrInvalidCredentials
// (malformed keys); messages name keys, never values.
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

// resolve reads the Secret and builds its provider; rv is the Secret's resourceVersion, empty
// when it could not be read.
func (f *Factory) resolve(ctx context.Context, namespace, name string) (_ Resolved, rv string, _ error) {
	var s corev1.Secret
	if err := f.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s); err != nil {
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
	switch s.Type {
	case TypeLocal:
		if f.Local == nil {
			return Resolved{}, s.ResourceVersion, fmt.Errorf("secret %s/%s: the embedded DNS server is not running: %w", namespace, name, ErrProviderNotFound)
		}
		r.Provider = f.Local
		if _, ok := s.Data[KeyDNSAddress]; !ok {
			r.DNSAddress = f.LocalAddr
		}
		return r, s.ResourceVersion, nil
	case TypePDNS:
		p, err := pdnsFromSecret(&s)
		if err != nil {
			return Resolved{}, s.ResourceVersion, fmt.Errorf("secret %s/%s: %w", namespace, name, err)
		}
		r.Provider = p
		return r, s.ResourceVersion, nil
	case TypeRFC2136:
		p, err := rfc2136FromSecret(&s)
		if err != nil {
			return Resolved{}, s.ResourceVersion, fmt.Errorf("secret %s/%s: %w", namespace, name, err)
		}
		r.Provider = p
		return r, s.ResourceVersion, nil
	case TypeAWS:
		get := func(k string) string { return strings.TrimSpace(string(s.Data[k])) }
		p, err := awsprovider.New(ctx, awsprovider.Config{
			AccessKeyID: get("AWS_ACCESS_KEY_ID"), SecretAccessKey: get("AWS_SECRET_ACCESS_KEY"),
			Region: get("AWS_REGION"), RoleARN: get("AWS_ROLE_ARN"), EndpointURL: get("AWS_ENDPOINT_URL"),
		})
		if err != nil {
			return Resolved{}, s.ResourceVersion, fmt.Errorf("secret %s/%s: Route 53 settings: %w", namespace, name, err)
		}
		r.Provider = p
		return r, s.ResourceVersion, nil
	case TypeAzure:
		get := func(k string) string { return strings.TrimSpace(string(s.Data[k])) }
		p, err := azureprovider.New(ctx, azureprovider.Config{
			SubscriptionID: get("AZURE_SUBSCRIPTION_ID"), ResourceGroup: get("AZURE_RESOURCE_GROUP"),
			TenantID: get("AZURE_TENANT_ID"), ClientID: get("AZURE_CLIENT_ID"), ClientSecret: get("AZURE_CLIENT_SECRET"),
			EndpointURL: get("AZURE_ENDPOINT_URL"), AuthorityHost: get("AZURE_AUTHORITY_HOST"),
		})
		if err != nil {
			return Resolved{}, s.ResourceVersion, fmt.Errorf("secret %s/%s: Azure DNS settings: %w", namespace, name, err)
		}
		r.Provider = p
		return r, s.ResourceVersion, nil
	case TypeGoogle:
		get := func(k string) string { return strings.TrimSpace(string(s.Data[k])) }
		if get("GOOGLE_PROJECT_ID") == "" {
			return Resolved{}, s.ResourceVersion, fmt.Errorf("secret %s/%s: key GOOGLE_PROJECT_ID is required: %w", namespace, name, ErrInvalidCredentials)
		}
		p, err := googleprovider.New(ctx, googleprovider.Config{
			ProjectID: get("GOOGLE_PROJECT_ID"), CredentialsJSON: get("GOOGLE_APPLICATION_CREDENTIALS_JSON"),
			EndpointURL: get("GOOGLE_ENDPOINT_URL"),
		})
		if err != nil {
			return Resolved{}, s.ResourceVersion, fmt.Errorf("secret %s/%s: Cloud DNS settings: %w", namespace, name, err)
		}
		r.Provider = p
		return r, s.ResourceVersion, nil
	default:
		return Resolved{}, s.ResourceVersion, fmt.Errorf("secret %s/%s: type %q is not a dnsplane provider type (want one of dnsplane.io/local, pdns, rfc2136, aws, google, azure): %w", namespace, name, s.Type, ErrProviderNotFound)
	}
}

// pdnsFromSecret builds the PowerDNS provider from a dnsplane.io/pdns Secret (docs/api.md):
// PDNS_API_URL and PDNS_API_KEY, optional PDNS_SERVER_ID and PDNS_NAMESERVERS (a comma list).
// Errors wrap ErrInvalidCredentials and name keys, never values.
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
