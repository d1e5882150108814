package aws

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/aws/smithy-go"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

var _ provider.KSKRoller = (*Provider)(nil)

// kskRefusedCodes are the errors of the key-signing key operations that refuse a step for a
// reason in the zone's state (Route 53 API Reference, Activate-, Deactivate- and
// DeleteKeySigningKey, Errors): they wrap provider.ErrSigningRefused like refusedCodes.
var kskRefusedCodes = map[string]bool{"KeySigningKeyInParentDSRecord": true, "KeySigningKeyInUse": true,
	"KeySigningKeyAlreadyExists": true}

// KSKRolloverSupported implements provider.KSKRoller: Route 53 takes one key-signing key per
// customer managed KMS key and hosted zone, so a rollover needs AWS_DNSSEC_ROLLOVER_KMS_KEY_ARN
// beside AWS_DNSSEC_KMS_KEY_ARN.
func (p *Provider) KSKRolloverSupported() error {
	if p.kmsARN == "" || p.kmsARN2 == "" || p.kmsARN == p.kmsARN2 {
		return fmt.Errorf("%w: Route 53 makes each key-signing key of a hosted zone in its own customer managed KMS key: "+
			"a KSK rollover needs AWS_DNSSEC_KMS_KEY_ARN and a second key AWS_DNSSEC_ROLLOVER_KMS_KEY_ARN in the provider Secret", provider.ErrNotCapable)
	}
	return nil
}

// KSKs implements provider.KSKRoller (GetDNSSEC).
func (p *Provider) KSKs(ctx context.Context, zoneID string) ([]provider.KSK, error) {
	id := stripZoneID(zoneID)
	out, err := p.client.GetDNSSEC(ctx, &route53.GetDNSSECInput{HostedZoneId: aws.String(id)})
	if err != nil {
		return nil, signingErr("GetDNSSEC", err)
	}
	name, err := p.zoneName(ctx, id)
	if err != nil {
		return nil, err
	}
	ksks := make([]provider.KSK, 0, len(out.KeySigningKeys))
	for _, k := range out.KeySigningKeys {
		ds, _, err := kskRecords(name, k)
		if err != nil {
			return nil, err
		}
		st := provider.KSKOther
		switch aws.ToString(k.Status) {
		case kskActive:
			st = provider.KSKActive
		case kskInactive:
			st = provider.KSKInactive
		}
		ksks = append(ksks, provider.KSK{Name: aws.ToString(k.Name), State: st, Status: aws.ToString(k.Status), DS: ds,
			Created: aws.ToTime(k.CreatedDate)})
	}
	return ksks, nil
}

// CreateKSK implements provider.KSKRoller: the INACTIVE key-signing key name in whichever of
// AWS_DNSSEC_KMS_KEY_ARN and AWS_DNSSEC_ROLLOVER_KMS_KEY_ARN no key of the zone is in
// (CreateKeySigningKey).
func (p *Provider) CreateKSK(ctx context.Context, zoneID, name string) error {
	if err := p.KSKRolloverSupported(); err != nil {
		return err
	}
	id := stripZoneID(zoneID)
	out, err := p.client.GetDNSSEC(ctx, &route53.GetDNSSECInput{HostedZoneId: aws.String(id)})
	if err != nil {
		return signingErr("GetDNSSEC", err)
	}
	if slices.ContainsFunc(out.KeySigningKeys, func(k types.KeySigningKey) bool { return aws.ToString(k.Name) == name }) {
		return nil // made by an earlier call whose answer was lost
	}
	arn := p.kmsARN
	if slices.ContainsFunc(out.KeySigningKeys, func(k types.KeySigningKey) bool { return aws.ToString(k.KmsArn) == arn }) {
		arn = p.kmsARN2
	}
	_, err = p.client.CreateKeySigningKey(ctx, &route53.CreateKeySigningKeyInput{
		HostedZoneId: aws.String(id), Name: aws.String(name), KeyManagementServiceArn: aws.String(arn),
		Status: aws.String(kskInactive), CallerReference: aws.String("dnsplane-" + id + "-" + name),
	})
	return kskErr("CreateKeySigningKey", err)
}

// ActivateKSK implements provider.KSKRoller (ActivateKeySigningKey).
func (p *Provider) ActivateKSK(ctx context.Context, zoneID, name string) error {
	_, err := p.client.ActivateKeySigningKey(ctx, &route53.ActivateKeySigningKeyInput{
		HostedZoneId: aws.String(stripZoneID(zoneID)), Name: aws.String(name)})
	return kskErr("ActivateKeySigningKey", err)
}

// DeactivateKSK implements provider.KSKRoller (DeactivateKeySigningKey; Route 53 refuses it
// while the parent publishes the key's DS: KeySigningKeyInParentDSRecord).
func (p *Provider) DeactivateKSK(ctx context.Context, zoneID, name string) error {
	_, err := p.client.DeactivateKeySigningKey(ctx, &route53.DeactivateKeySigningKeyInput{
		HostedZoneId: aws.String(stripZoneID(zoneID)), Name: aws.String(name)})
	return kskErr("DeactivateKeySigningKey", err)
}

// DeleteKSK implements provider.KSKRoller (DeleteKeySigningKey); NoSuchKeySigningKey is done.
func (p *Provider) DeleteKSK(ctx context.Context, zoneID, name string) error {
	_, err := p.client.DeleteKeySigningKey(ctx, &route53.DeleteKeySigningKeyInput{
		HostedZoneId: aws.String(stripZoneID(zoneID)), Name: aws.String(name)})
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "NoSuchKeySigningKey" {
		return nil
	}
	return kskErr("DeleteKeySigningKey", err)
}

// kskErr maps an error of a key-signing key operation: kskRefusedCodes and refusedCodes wrap
// provider.ErrSigningRefused with Route 53's code and message; others as signingErr.
func kskErr(op string, err error) error {
	var api smithy.APIError
	if errors.As(err, &api) && kskRefusedCodes[api.ErrorCode()] {
		return fmt.Errorf("route53 %s: %w: %s: %s", op, provider.ErrSigningRefused, api.ErrorCode(), api.ErrorMessage())
	}
	return signingErr(op, err)
}
