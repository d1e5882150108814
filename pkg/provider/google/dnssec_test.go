package google_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

// TestSigning_EnableThenState: EnableSigning patches the managed zone's dnssecConfig on (the
// fake makes a key-signing and a zone-signing key of the algorithm asked for), once; SigningState
// reports Signing with the DS Cloud DNS's dnsKeys.list digests give, the digest of the KSK it
// reports; DisableSigning turns it off again.
func TestSigning_EnableThenState(t *testing.T) {
	fake, p, z := setup(t)
	ctx := context.Background()
	if st, err := p.SigningState(ctx, z.ID); err != nil || st.Phase != provider.SigningOff {
		t.Fatalf("SigningState before = %+v, %v; want Off", st, err)
	}
	sp := provider.SigningParams{Algorithm: "RSASHA256", Scheme: "KSKZSK", Denial: "NSEC3"}
	for range 2 {
		if err := p.EnableSigning(ctx, z.ID, sp); err != nil {
			t.Fatalf("EnableSigning: %v", err)
		}
	}
	if n := fake.Count("managedZones.patch"); n != 1 {
		t.Fatalf("managedZones.patch requests = %d, want 1", n)
	}
	st, err := p.SigningState(ctx, z.ID)
	if err != nil || st.Phase != provider.SigningOn || len(st.DS) != 1 || len(st.DNSKEYs) != 2 {
		t.Fatalf("SigningState = %+v, %v; want Signing, one DS, two DNSKEYs", st, err)
	}
	var ksk *dns.DNSKEY
	for _, k := range st.DNSKEYs {
		if k.Flags&dns.SEP != 0 {
			ksk = k
		}
	}
	if ksk == nil || ksk.Algorithm != dns.RSASHA256 {
		t.Fatalf("DNSKEYs %v: want an RSASHA256 KSK", st.DNSKEYs)
	}
	own := ksk.ToDS(dns.SHA256)
	if ds := st.DS[0]; own.KeyTag != ds.KeyTag || !strings.EqualFold(own.Digest, ds.Digest) || ds.Hdr.Name != "example.test." {
		t.Fatalf("DS %v is not the digest of the KSK %v (%v)", ds, ksk, own)
	}
	if err := p.DisableSigning(ctx, z.ID); err != nil {
		t.Fatal(err)
	}
	if st, err := p.SigningState(ctx, z.ID); err != nil || st.Phase != provider.SigningOff {
		t.Fatalf("SigningState after DisableSigning = %+v, %v; want Off", st, err)
	}
}

// TestSigning_Unsupported: what Cloud DNS cannot sign with is ErrNotCapable, before any request.
func TestSigning_Unsupported(t *testing.T) {
	fake, p, z := setup(t)
	for _, sp := range []provider.SigningParams{
		{Algorithm: "ED25519", Scheme: "KSKZSK", Denial: "NSEC"},
		{Algorithm: "ECDSAP256SHA256", Scheme: "CSK", Denial: "NSEC"},
		{Algorithm: "ECDSAP256SHA256", Scheme: "KSKZSK", Denial: "Compact"},
		{Algorithm: "ECDSAP256SHA256", Scheme: "KSKZSK", Denial: "NSEC3", NSEC3Iterations: 5},
	} {
		if err := p.EnableSigning(context.Background(), z.ID, sp); !errors.Is(err, provider.ErrNotCapable) {
			t.Fatalf("EnableSigning(%+v) = %v, want ErrNotCapable", sp, err)
		}
	}
	if n := fake.Count("managedZones.patch"); n != 0 {
		t.Fatalf("%d managedZones.patch requests for refused parameters", n)
	}
}
