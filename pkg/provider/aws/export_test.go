package aws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"

	"github.com/dnsplane/dnsplane/internal/testing/route53fake"
)

// RawAliasWithTTL sends the fake an alias with a TTL through the SDK, past
// the provider's validation; the error is mapped as the provider maps it.
func RawAliasWithTTL(ctx context.Context, fake *route53fake.Server, zoneID string) error {
	p, err := New(ctx, Config{AccessKeyID: route53fake.DefaultAccessKeyID, SecretAccessKey: route53fake.DefaultSecretAccessKey,
		EndpointURL: fake.URL, HTTPClient: fake.Client(), MaxAttempts: 1})
	if err != nil {
		return err
	}
	_, err = p.client.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(zoneID),
		ChangeBatch: &types.ChangeBatch{Changes: []types.Change{{Action: types.ChangeActionCreate, ResourceRecordSet: &types.ResourceRecordSet{
			Name: aws.String("bad.example.test."), Type: types.RRTypeA, TTL: aws.Int64(60),
			AliasTarget: &types.AliasTarget{DNSName: aws.String("www.example.test."), HostedZoneId: aws.String(zoneID), EvaluateTargetHealth: true}}}}}})
	return mapErr("ChangeResourceRecordSets", err)
}
