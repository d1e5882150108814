package aws_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dnsplane/dnsplane/internal/testing/route53fake"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/aws"
)

const testRolloverKMSARN = "arn:aws:kms:us-east-1:123456789012:key/1a2b3c4d-5e6f-7081-92a3-b4c5d6e7f809"

// TestKSKs_RolloverCallsAndRefusals: through the SDK against the fake, a second key-signing key
// is made INACTIVE in the rollover KMS key (Route 53 takes one KSK per KMS key and zone), and
// activated; Route 53's refusals wrap provider.ErrSigningRefused with its error code:
// deactivating the old key while the parent publishes its DS (KeySigningKeyInParentDSRecord),
// deactivating the only active key (KeySigningKeyInUse), deleting an active key
// (InvalidKeySigningKeyStatus). Once the parent holds the new DS alone the old key is
// deactivated and deleted, and a second delete is no error. Without the second KMS key no
// rollover is possible.
func TestKSKs_RolloverCallsAndRefusals(t *testing.T) {
	fake, p, z := setup(t, func(c *aws.Config) { c.DNSSECKMSKeyARN, c.DNSSECRolloverKMSKeyARN = testKMSARN, testRolloverKMSARN })
	ctx := context.Background()
	if err := p.EnableSigning(ctx, z.ID, route53Signing); err != nil {
		t.Fatal(err)
	}
	if err := p.KSKRolloverSupported(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := p.CreateKSK(ctx, z.ID, "dnsplane_ksk2"); err != nil {
			t.Fatalf("CreateKSK: %v", err)
		}
	}
	ks := fake.KSKs(z.ID)
	if len(ks) != 2 || ks[1].Status != route53fake.StatusInactive || ks[1].KMSArn != testRolloverKMSARN {
		t.Fatalf("KSKs after CreateKSK: %+v; want dnsplane_ksk2 INACTIVE in the rollover KMS key", ks)
	}
	refused := func(err error, code string) {
		t.Helper()
		if !errors.Is(err, provider.ErrSigningRefused) || !strings.Contains(err.Error(), code) {
			t.Fatalf("error %v; want ErrSigningRefused with %s", err, code)
		}
	}
	refused(p.DeactivateKSK(ctx, z.ID, aws.KSKName), "KeySigningKeyInUse")
	if err := p.ActivateKSK(ctx, z.ID, "dnsplane_ksk2"); err != nil {
		t.Fatal(err)
	}
	list, err := p.KSKs(ctx, z.ID)
	if err != nil || len(list) != 2 || list[0].State != provider.KSKActive || list[1].State != provider.KSKActive || list[1].DS == nil {
		t.Fatalf("KSKs = %+v, %v; want both Active with their DS", list, err)
	}
	parent := []string{ks[0].DS, ks[1].DS}
	fake.SetParentDS(func(string) ([]string, error) { return parent, nil })
	refused(p.DeactivateKSK(ctx, z.ID, aws.KSKName), "KeySigningKeyInParentDSRecord")
	refused(p.DeleteKSK(ctx, z.ID, aws.KSKName), "InvalidKeySigningKeyStatus")
	parent = []string{ks[1].DS}
	if err := p.DeactivateKSK(ctx, z.ID, aws.KSKName); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := p.DeleteKSK(ctx, z.ID, aws.KSKName); err != nil {
			t.Fatalf("DeleteKSK: %v", err)
		}
	}
	if ks := fake.KSKs(z.ID); len(ks) != 1 || ks[0].Name != "dnsplane_ksk2" || ks[0].Status != route53fake.StatusActive {
		t.Fatalf("KSKs at the end: %+v", ks)
	}
	_, one, _ := setup(t, withKMS)
	if err := one.KSKRolloverSupported(); !errors.Is(err, provider.ErrNotCapable) ||
		!strings.Contains(err.Error(), "AWS_DNSSEC_ROLLOVER_KMS_KEY_ARN") {
		t.Fatalf("one KMS key: %v; want ErrNotCapable naming AWS_DNSSEC_ROLLOVER_KMS_KEY_ARN", err)
	}
}
