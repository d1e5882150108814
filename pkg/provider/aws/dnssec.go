package aws

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/aws/smithy-go"
	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// KSKName is the name of the key-signing key EnableSigning creates in a hosted zone (Route 53
// API Reference, CreateKeySigningKey: letters, digits and underscores, unique in the zone).
const KSKName = "dnsplane_ksk1"

// Route 53's KSK statuses and its zone's ServeSignature values (Route 53 API Reference,
// KeySigningKey.Status and DNSSECStatus.ServeSignature).
const (
	kskActive          = "ACTIVE"
	kskInactive        = "INACTIVE"
	statusActionNeeded = "ACTION_NEEDED"
	statusFailure      = "INTERNAL_FAILURE"
	serveSigning       = "SIGNING"
	serveNotSigning    = "NOT_SIGNING"
)

// refusedCodes are the error codes of the DNSSEC operations that only the account's owner can
// clear: a KMS key Route 53 cannot use, a key or zone state that forbids the step.
var refusedCodes = map[string]bool{"InvalidKMSArn": true, "InvalidKeySigningKeyStatus": true, "InvalidSigningStatus": true,
	"KeySigningKeyWithActiveStatusNotFound": true, "DNSSECNotFound": true, "TooManyKeySigningKeys": true,
	"HostedZonePartiallyDelegated": true, "InvalidKeySigningKeyName": true}

// SigningSupported implements provider.ManagedSigner: Route 53 signs a public hosted zone with a
// key-signing key in the customer managed KMS key AWS_DNSSEC_KMS_KEY_ARN and a zone-signing key
// it manages itself, both ECDSAP256SHA256, and denies existence with NSEC (Route 53 Developer
// Guide, "Configuring DNSSEC signing in Amazon Route 53").
func (p *Provider) SigningSupported(sp provider.SigningParams) error {
	var why []string
	if p.vpc != nil {
		why = append(why, "Route 53 signs public hosted zones only (AWS_PRIVATE_ZONE_VPC_ID makes them private)")
	}
	if p.kmsARN == "" {
		why = append(why, "Route 53 makes its key-signing key in a customer managed KMS key: the provider Secret needs AWS_DNSSEC_KMS_KEY_ARN")
	}
	if sp.Algorithm != "" && sp.Algorithm != "ECDSAP256SHA256" {
		why = append(why, fmt.Sprintf("Route 53 signs with ECDSAP256SHA256 only, not %s", sp.Algorithm))
	}
	if sp.Scheme != "" && sp.Scheme != "KSKZSK" {
		why = append(why, fmt.Sprintf("Route 53 signs with a KSK and a ZSK (keys.scheme: KSKZSK), not %s", sp.Scheme))
	}
	if sp.Denial != "" && sp.Denial != "NSEC" {
		why = append(why, fmt.Sprintf("Route 53 denies with NSEC only, not %s", sp.Denial))
	}
	return provider.NotCapable(why)
}

// EnableSigning implements provider.ManagedSigner: it creates the key-signing key KSKName in
// AWS_DNSSEC_KMS_KEY_ARN, ACTIVE (CreateKeySigningKey), activates it when it is INACTIVE
// (ActivateKeySigningKey), and enables signing of the hosted zone (EnableHostedZoneDNSSEC).
// Each step is skipped when GetDNSSEC shows it done.
func (p *Provider) EnableSigning(ctx context.Context, zoneID string, sp provider.SigningParams) error {
	if err := p.SigningSupported(sp); err != nil {
		return err
	}
	id := stripZoneID(zoneID)
	out, err := p.client.GetDNSSEC(ctx, &route53.GetDNSSECInput{HostedZoneId: aws.String(id)})
	if err != nil {
		return signingErr("GetDNSSEC", err)
	}
	if err := p.ensureKSK(ctx, id, out.KeySigningKeys); err != nil {
		return err
	}
	if out.Status != nil && aws.ToString(out.Status.ServeSignature) == serveSigning {
		return nil
	}
	_, err = p.client.EnableHostedZoneDNSSEC(ctx, &route53.EnableHostedZoneDNSSECInput{HostedZoneId: aws.String(id)})
	return signingErr("EnableHostedZoneDNSSEC", err)
}

// ensureKSK makes the hosted zone's key-signing key KSKName ACTIVE: created when there is no
// KSK, activated when it is INACTIVE; any other ACTIVE KSK will do.
func (p *Provider) ensureKSK(ctx context.Context, id string, ksks []types.KeySigningKey) error {
	for _, k := range ksks {
		if aws.ToString(k.Status) == kskActive {
			return nil
		}
	}
	for _, k := range ksks {
		if aws.ToString(k.Name) == KSKName && aws.ToString(k.Status) == kskInactive {
			_, err := p.client.ActivateKeySigningKey(ctx, &route53.ActivateKeySigningKeyInput{HostedZoneId: aws.String(id), Name: k.Name})
			return signingErr("ActivateKeySigningKey", err)
		}
	}
	_, err := p.client.CreateKeySigningKey(ctx, &route53.CreateKeySigningKeyInput{
		HostedZoneId: aws.String(id), Name: aws.String(KSKName), KeyManagementServiceArn: aws.String(p.kmsARN),
		Status: aws.String(kskActive), CallerReference: aws.String("dnsplane-" + id + "-" + KSKName),
	})
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "KeySigningKeyAlreadyExists" {
		return nil // made by an earlier call whose answer was lost
	}
	return signingErr("CreateKeySigningKey", err)
}

// DisableSigning implements provider.ManagedSigner (DisableHostedZoneDNSSEC). The key-signing
// key stays, so that signing turned on again uses it.
func (p *Provider) DisableSigning(ctx context.Context, zoneID string) error {
	id := stripZoneID(zoneID)
	out, err := p.client.GetDNSSEC(ctx, &route53.GetDNSSECInput{HostedZoneId: aws.String(id)})
	if err != nil {
		return signingErr("GetDNSSEC", err)
	}
	if out.Status == nil || aws.ToString(out.Status.ServeSignature) == serveNotSigning {
		return nil
	}
	_, err = p.client.DisableHostedZoneDNSSEC(ctx, &route53.DisableHostedZoneDNSSECInput{HostedZoneId: aws.String(id)})
	return signingErr("DisableHostedZoneDNSSEC", err)
}

// SigningState implements provider.ManagedSigner from GetDNSSEC (signingState).
func (p *Provider) SigningState(ctx context.Context, zoneID string) (provider.SigningState, error) {
	id := stripZoneID(zoneID)
	out, err := p.client.GetDNSSEC(ctx, &route53.GetDNSSECInput{HostedZoneId: aws.String(id)})
	if err != nil {
		return provider.SigningState{}, signingErr("GetDNSSEC", err)
	}
	name, err := p.zoneName(ctx, id)
	if err != nil {
		return provider.SigningState{}, err
	}
	return signingState(name, out.Status, out.KeySigningKeys)
}

// signingState maps Route 53's DNSSEC status of zone to a provider.SigningState: a zone or KSK
// ACTION_NEEDED is SigningActionNeeded, INTERNAL_FAILURE SigningFailed (with its StatusMessage);
// SIGNING with an ACTIVE KSK is SigningOn with the DS of every ACTIVE KSK (its DSRecord);
// NOT_SIGNING is SigningOff; anything else (DELETING, SIGNING without an ACTIVE KSK) is
// SigningPending. Pure.
func signingState(zone string, st *types.DNSSECStatus, ksks []types.KeySigningKey) (provider.SigningState, error) {
	serve, msg := "", ""
	if st != nil {
		serve, msg = aws.ToString(st.ServeSignature), aws.ToString(st.StatusMessage)
	}
	for _, k := range ksks {
		if s := aws.ToString(k.Status); s == statusActionNeeded || s == statusFailure {
			serve, msg = s, fmt.Sprintf("key-signing key %s: %s", aws.ToString(k.Name), aws.ToString(k.StatusMessage))
		}
	}
	out := provider.SigningState{Message: msg}
	switch serve {
	case statusActionNeeded:
		out.Phase = provider.SigningActionNeeded
		return out, nil
	case statusFailure:
		out.Phase = provider.SigningFailed
		return out, nil
	case serveNotSigning, "":
		out.Phase = provider.SigningOff
		return out, nil
	}
	for _, k := range ksks {
		if aws.ToString(k.Status) != kskActive {
			continue
		}
		ds, key, err := kskRecords(zone, k)
		if err != nil {
			return provider.SigningState{}, err
		}
		out.DS, out.DNSKEYs = append(out.DS, ds), append(out.DNSKEYs, key)
	}
	out.Phase = provider.SigningPending
	if serve == serveSigning && len(out.DS) > 0 {
		out.Phase = provider.SigningOn
	}
	return out, nil
}

// kskRecords parses a KSK's DSRecord and DNSKEYRecord (rdata in presentation form) as records of
// zone.
func kskRecords(zone string, k types.KeySigningKey) (*dns.DS, *dns.DNSKEY, error) {
	owner := dnswire.Fqdn(zone)
	ds, err := dns.NewRR(owner + " 0 IN DS " + aws.ToString(k.DSRecord))
	if err != nil || ds == nil {
		return nil, nil, fmt.Errorf("route53 GetDNSSEC: key-signing key %s: DSRecord does not parse: %v", aws.ToString(k.Name), err)
	}
	key, err := dns.NewRR(owner + " 0 IN DNSKEY " + aws.ToString(k.DNSKEYRecord))
	if err != nil || key == nil {
		return nil, nil, fmt.Errorf("route53 GetDNSSEC: key-signing key %s: DNSKEYRecord does not parse: %v", aws.ToString(k.Name), err)
	}
	d, ok1 := ds.(*dns.DS)
	dk, ok2 := key.(*dns.DNSKEY)
	if !ok1 || !ok2 {
		return nil, nil, fmt.Errorf("route53 GetDNSSEC: key-signing key %s: not a DS and a DNSKEY", aws.ToString(k.Name))
	}
	return d, dk, nil
}

// signingErr maps an error of a DNSSEC operation: the codes only the account's owner can clear
// (refusedCodes) wrap provider.ErrSigningRefused with Route 53's message; others as mapErr.
func signingErr(op string, err error) error {
	var api smithy.APIError
	if errors.As(err, &api) && refusedCodes[api.ErrorCode()] {
		return fmt.Errorf("route53 %s: %w: %s: %s", op, provider.ErrSigningRefused, api.ErrorCode(), api.ErrorMessage())
	}
	return mapErr(op, err)
}
