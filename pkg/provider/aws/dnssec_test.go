package aws_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/internal/testing/route53fake"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/aws"
)

// testKMSARN is a customer managed KMS key ARN of the shape the fake takes.
const testKMSARN = "arn:aws:kms:us-east-1:123456789012:key/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"

// route53Signing: the KSK and ZSK scheme with ECDSAP256SHA256 and NSEC, what Route 53 signs with.
var route53Signing = provider.SigningParams{Algorithm: "ECDSAP256SHA256", Scheme: "KSKZSK", Denial: "NSEC"}

func withKMS(c *aws.Config) { c.DNSSECKMSKeyARN = testKMSARN }

// TestSigning_EnableThenState: EnableSigning creates an ACTIVE key-signing key in the KMS key and
// enables signing of the hosted zone (each through the SDK against the fake's REST-XML); a
// second EnableSigning changes nothing; SigningState reports Signing with the KSK's DS, which is
// the digest of the DNSKEY it reports. DisableSigning stops signing and keeps the KSK, which a
// new EnableSigning uses again.
func TestSigning_EnableThenState(t *testing.T) {
	fake, p, z := setup(t, withKMS)
	ctx := context.Background()
	st, err := p.SigningState(ctx, z.ID)
	if err != nil || st.Phase != provider.SigningOff {
		t.Fatalf("SigningState before = %+v, %v; want Off", st, err)
	}
	for range 2 {
		if err := p.EnableSigning(ctx, z.ID, route53Signing); err != nil {
			t.Fatalf("EnableSigning: %v", err)
		}
	}
	if n := fake.Count("CreateKeySigningKey"); n != 1 {
		t.Fatalf("CreateKeySigningKey requests = %d, want 1", n)
	}
	if n := fake.Count("EnableHostedZoneDNSSEC"); n != 1 {
		t.Fatalf("EnableHostedZoneDNSSEC requests = %d, want 1", n)
	}
	st, err = p.SigningState(ctx, z.ID)
	if err != nil || st.Phase != provider.SigningOn || len(st.DS) != 1 || len(st.DNSKEYs) != 1 {
		t.Fatalf("SigningState = %+v, %v; want Signing with one DS and one DNSKEY", st, err)
	}
	ds, key := st.DS[0], st.DNSKEYs[0]
	own := key.ToDS(dns.SHA256)
	if ds.Hdr.Name != "example.test." || own == nil || own.KeyTag != ds.KeyTag || !strings.EqualFold(own.Digest, ds.Digest) ||
		ds.Algorithm != dns.ECDSAP256SHA256 || key.Flags != 257 {
		t.Fatalf("DS %v is not the digest of the KSK %v", ds, key)
	}
	if err := p.DisableSigning(ctx, z.ID); err != nil {
		t.Fatal(err)
	}
	serve, keys := fake.Signing(z.ID)
	if serve != route53fake.ServeNotSigning || keys[aws.KSKName] != route53fake.StatusActive {
		t.Fatalf("after DisableSigning: ServeSignature %s, KSKs %v; want NOT_SIGNING, the KSK kept", serve, keys)
	}
	if err := p.EnableSigning(ctx, z.ID, route53Signing); err != nil {
		t.Fatal(err)
	}
	if n := fake.Count("CreateKeySigningKey"); n != 1 {
		t.Fatalf("CreateKeySigningKey requests = %d after re-enabling, want the KSK reused", n)
	}
}

// TestSigning_StatusMapping: the fake's ACTION_NEEDED and INTERNAL_FAILURE (zone and KSK status,
// with a status message) are ActionNeeded and Failed with Route 53's message.
func TestSigning_StatusMapping(t *testing.T) {
	fake, p, z := setup(t, withKMS)
	ctx := context.Background()
	if err := p.EnableSigning(ctx, z.ID, route53Signing); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		status string
		want   provider.SigningPhase
	}{
		{route53fake.StatusActionNeeded, provider.SigningActionNeeded},
		{route53fake.StatusInternalError, provider.SigningFailed},
		{"", provider.SigningOn},
	} {
		const msg = "The customer managed key is disabled."
		fake.DNSSECFault(tc.status, msg)
		st, err := p.SigningState(ctx, z.ID)
		if err != nil || st.Phase != tc.want {
			t.Fatalf("fault %q: SigningState = %+v, %v; want %s", tc.status, st, err, tc.want)
		}
		if tc.status != "" && !strings.Contains(st.Message, msg) {
			t.Fatalf("fault %q: message %q does not carry Route 53's %q", tc.status, st.Message, msg)
		}
	}
}

// TestSigning_Refusals: what Route 53 cannot do is ErrNotCapable before any request (no KMS key
// ARN, another algorithm, a CSK, NSEC3); a KMS key ARN Route 53 refuses is ErrSigningRefused with
// its InvalidKMSArn message.
func TestSigning_Refusals(t *testing.T) {
	fake, p, z := setup(t, nil)
	ctx := context.Background()
	for _, sp := range []provider.SigningParams{
		route53Signing, // no AWS_DNSSEC_KMS_KEY_ARN
	} {
		if err := p.EnableSigning(ctx, z.ID, sp); !errors.Is(err, provider.ErrNotCapable) || !strings.Contains(err.Error(), "AWS_DNSSEC_KMS_KEY_ARN") {
			t.Fatalf("EnableSigning without a KMS key: %v, want ErrNotCapable naming AWS_DNSSEC_KMS_KEY_ARN", err)
		}
	}
	pk := newProvider(t, fake, withKMS)
	for _, sp := range []provider.SigningParams{
		{Algorithm: "ED25519", Scheme: "KSKZSK", Denial: "NSEC"},
		{Algorithm: "ECDSAP256SHA256", Scheme: "CSK", Denial: "NSEC"},
		{Algorithm: "ECDSAP256SHA256", Scheme: "KSKZSK", Denial: "NSEC3"},
	} {
		if err := pk.EnableSigning(ctx, z.ID, sp); !errors.Is(err, provider.ErrNotCapable) {
			t.Fatalf("EnableSigning(%+v): %v, want ErrNotCapable", sp, err)
		}
	}
	if n := fake.Count("GetDNSSEC"); n != 0 {
		t.Fatalf("%d GetDNSSEC requests for refused parameters, want none", n)
	}
	bad := newProvider(t, fake, func(c *aws.Config) { c.DNSSECKMSKeyARN = "arn:aws:kms:eu-west-1:123456789012:key/x" })
	err := bad.EnableSigning(ctx, z.ID, route53Signing)
	if !errors.Is(err, provider.ErrSigningRefused) || !strings.Contains(err.Error(), "InvalidKMSArn") {
		t.Fatalf("EnableSigning with a KMS key of another region: %v, want ErrSigningRefused (InvalidKMSArn)", err)
	}
}
