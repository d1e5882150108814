package factory

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

// ConfidentialKeys returns the keys of a Secret of type t whose values are secrets proper, or
// nil for a type that holds none (dnsplane.io/local) or is not a provider's: the PowerDNS API
// key, the TSIG secret, the AWS secret access key, the Google service-account JSON (its
// private_key), the Azure client secret and a webhook's headers (WEBHOOK_HEADERS). The manager
// never writes these to a log, an Event, a status or a metric (docs/reliability.md, "Secrets");
// the other keys hold settings and identifiers it may name (an API URL, a host, a TSIG key name,
// an access key ID, a tenant ID).
func ConfidentialKeys(t corev1.SecretType) []string {
	switch t {
	case TypePDNS:
		return []string{"PDNS_API_KEY"}
	case TypeRFC2136:
		return []string{"RFC2136_TSIG_SECRET"}
	case TypeAWS:
		return []string{"AWS_SECRET_ACCESS_KEY"}
	case TypeGoogle:
		return []string{"GOOGLE_APPLICATION_CREDENTIALS_JSON"}
	case TypeAzure:
		return []string{"AZURE_CLIENT_SECRET"}
	case TypeWebhook:
		return []string{KeyWebhookHeaders}
	}
	return nil
}

// credentialKeys returns the keys of Secret s that hold its provider's credentials and are set,
// in the order docs/api.md lists them: what a user edits when the provider rejects them.
func credentialKeys(s *corev1.Secret) []string {
	var all []string
	switch s.Type {
	case TypePDNS:
		all = []string{"PDNS_API_KEY"}
	case TypeRFC2136:
		all = []string{"RFC2136_TSIG_KEYNAME", "RFC2136_TSIG_SECRET", "RFC2136_TSIG_ALGORITHM"}
	case TypeAWS:
		all = []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ROLE_ARN"}
	case TypeGoogle:
		all = []string{"GOOGLE_APPLICATION_CREDENTIALS_JSON"}
	case TypeAzure:
		all = []string{"AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET"}
	case TypeWebhook:
		all = []string{KeyWebhookHeaders}
	}
	var set []string
	for _, k := range all {
		if len(strings.TrimSpace(string(s.Data[k]))) > 0 {
			set = append(set, k)
		}
	}
	return set
}

// credentialHint names where the rejected credentials come from: the Secret (namespace/name) and
// its credential keys, never their values.
func credentialHint(s *corev1.Secret) string {
	keys := credentialKeys(s)
	if len(keys) == 0 {
		return fmt.Sprintf("secret %s/%s sets no credential key; the manager's ambient credentials were rejected", s.Namespace, s.Name)
	}
	noun := "key"
	if len(keys) > 1 {
		noun = "keys"
	}
	return fmt.Sprintf("the provider rejected the credentials of secret %s/%s (%s %s)", s.Namespace, s.Name, noun, strings.Join(keys, ", "))
}

// namedCredentials prefixes every error that wraps provider.ErrInvalidCredentials with hint
// (credentialHint), so that an InvalidCredentials condition says which Secret and key to fix
// rather than only "HTTP 401: Unauthorized", and reports it to rejected. Other errors pass
// unchanged.
type namedCredentials struct {
	inner provider.Provider
	hint  string
	// rejected, when set, receives every such error, wrapped (Factory.reject).
	rejected func(error)
}

var (
	_ provider.Provider   = namedCredentials{}
	_ provider.ZoneReader = namedCredentials{}
)

func (p namedCredentials) wrap(err error) error {
	if err == nil || !errors.Is(err, provider.ErrInvalidCredentials) {
		return err
	}
	err = fmt.Errorf("%s: %w", p.hint, err)
	if p.rejected != nil {
		p.rejected(err)
	}
	return err
}

// Capabilities implements provider.Provider.
func (p namedCredentials) Capabilities() provider.Capabilities { return p.inner.Capabilities() }

// EnsureZone implements provider.Provider.
func (p namedCredentials) EnsureZone(ctx context.Context, spec provider.ZoneSpec) (provider.Zone, error) {
	z, err := p.inner.EnsureZone(ctx, spec)
	return z, p.wrap(err)
}

// GetZone implements provider.Provider.
func (p namedCredentials) GetZone(ctx context.Context, id string) (provider.Zone, error) {
	z, err := p.inner.GetZone(ctx, id)
	return z, p.wrap(err)
}

// ReadZone implements provider.ZoneReader: the wrapped provider's (provider.ReadZone).
func (p namedCredentials) ReadZone(ctx context.Context, id string) (provider.Zone, []provider.RecordSet, error) {
	z, sets, err := provider.ReadZone(ctx, p.inner, id)
	return z, sets, p.wrap(err)
}

// ListZones implements provider.Provider.
func (p namedCredentials) ListZones(ctx context.Context) ([]provider.Zone, error) {
	z, err := p.inner.ListZones(ctx)
	return z, p.wrap(err)
}

// DeleteZone implements provider.Provider.
func (p namedCredentials) DeleteZone(ctx context.Context, id string) error {
	return p.wrap(p.inner.DeleteZone(ctx, id))
}

// ListRecordSets implements provider.Provider.
func (p namedCredentials) ListRecordSets(ctx context.Context, zoneID string) ([]provider.RecordSet, error) {
	rs, err := p.inner.ListRecordSets(ctx, zoneID)
	return rs, p.wrap(err)
}

// ApplyChanges implements provider.Provider.
func (p namedCredentials) ApplyChanges(ctx context.Context, zoneID string, changes []provider.Change) error {
	return p.wrap(p.inner.ApplyChanges(ctx, zoneID, changes))
}

var _ provider.SignerSource = namedCredentials{}

// KeySigner implements provider.SignerSource: the wrapped provider's KeySigner, its errors named
// as every call's, or nil.
func (p namedCredentials) KeySigner() provider.KeySigner {
	inner := provider.KeySignerOf(p.inner)
	if inner == nil {
		return nil
	}
	return namedKeySigner{p: p, inner: inner}
}

// ManagedSigner implements provider.SignerSource: the wrapped provider's ManagedSigner, its
// errors named as every call's, or nil.
func (p namedCredentials) ManagedSigner() provider.ManagedSigner {
	inner := provider.ManagedSignerOf(p.inner)
	if inner == nil {
		return nil
	}
	return namedManagedSigner{p: p, inner: inner}
}

type namedKeySigner struct {
	p     namedCredentials
	inner provider.KeySigner
}

func (s namedKeySigner) SetKeys(ctx context.Context, zoneID string, keys []provider.SigningKey, denial provider.Denial) (provider.SignedZone, error) {
	out, err := s.inner.SetKeys(ctx, zoneID, keys, denial)
	return out, s.p.wrap(err)
}

type namedManagedSigner struct {
	p     namedCredentials
	inner provider.ManagedSigner
}

func (s namedManagedSigner) SigningSupported(sp provider.SigningParams) error {
	return s.inner.SigningSupported(sp)
}

func (s namedManagedSigner) EnableSigning(ctx context.Context, zoneID string, sp provider.SigningParams) error {
	return s.p.wrap(s.inner.EnableSigning(ctx, zoneID, sp))
}

func (s namedManagedSigner) DisableSigning(ctx context.Context, zoneID string) error {
	return s.p.wrap(s.inner.DisableSigning(ctx, zoneID))
}

func (s namedManagedSigner) SigningState(ctx context.Context, zoneID string) (provider.SigningState, error) {
	out, err := s.inner.SigningState(ctx, zoneID)
	return out, s.p.wrap(err)
}
