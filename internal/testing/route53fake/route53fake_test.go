package route53fake_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	"github.com/dnsplane/dnsplane/internal/testing/fakedns"
	"github.com/dnsplane/dnsplane/internal/testing/route53fake"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/aws"
)

func newProvider(t *testing.T, fake *route53fake.Server, keyID, secret string) *aws.Provider {
	t.Helper()
	p, err := aws.New(context.Background(), aws.Config{AccessKeyID: keyID, SecretAccessKey: secret, Region: "us-east-1",
		EndpointURL: fake.URL, HTTPClient: fake.Client(), MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDNSAddr_ServesZonesFromTheAPIState: a zone created and written through the real SDK
// client answers SOA (the one the fake created), NS, its records (TXT escapes decoded from
// Route 53's octal form), NXDOMAIN with the SOA, and REFUSED once deleted; private zones are not
// served.
func TestDNSAddr_ServesZonesFromTheAPIState(t *testing.T) {
	fake := route53fake.New()
	t.Cleanup(fake.Close)
	p := newProvider(t, fake, route53fake.DefaultAccessKeyID, route53fake.DefaultSecretAccessKey)
	ctx := context.Background()
	z, err := p.EnsureZone(ctx, provider.ZoneSpec{Name: "r53.test", CallerReference: "ref-1"})
	if err != nil {
		t.Fatal(err)
	}
	addr := fake.DNSAddr()
	r := dnstest.Ask(t, addr, "r53.test", dns.TypeSOA)
	if !r.Authoritative || len(r.Answer) != 1 || r.Answer[0].(*dns.SOA).Ns != "ns-1.awsdns-00.test." {
		t.Fatalf("SOA: %v", r)
	}
	if r := dnstest.Ask(t, addr, "r53.test", dns.TypeNS); len(r.Answer) != 4 {
		t.Fatalf("NS: %v", r)
	}
	txt := "v=\"quoted\" \xe2\x9c\x93 done"
	err = p.ApplyChanges(ctx, z.ID, []provider.Change{
		{Action: provider.ActionCreate, After: &provider.RecordSet{Name: "www.r53.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.7"}}},
		{Action: provider.ActionCreate, After: &provider.RecordSet{Name: "www.r53.test", Type: "TXT", TTL: 60, Targets: []string{txt}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := dnstest.Ask(t, addr, "www.r53.test", dns.TypeA); len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "192.0.2.7" {
		t.Fatalf("A: %v", r)
	}
	if r := dnstest.Ask(t, addr, "www.r53.test", dns.TypeTXT); len(r.Answer) != 1 || provider.TXTValue(r.Answer[0].(*dns.TXT).Txt) != txt {
		t.Fatalf("TXT: %v", r)
	}
	fakedns.CheckNXDOMAINThenGone(t, addr, "r53.test", func() error { return p.DeleteZone(ctx, z.ID) })
}

// TestCredentials_WrongKeysAreRejected: an unknown access key ID gets InvalidClientTokenId and a
// wrong secret key SignatureDoesNotMatch (both 403, which the provider maps to
// ErrInvalidCredentials); an unsigned request gets 403 MissingAuthenticationToken; the configured
// pair works.
func TestCredentials_WrongKeysAreRejected(t *testing.T) {
	fake := route53fake.New()
	fake.AccessKeyID, fake.SecretAccessKey = "AKIDOTHER", "other-secret"
	t.Cleanup(fake.Close)
	ctx := context.Background()
	for _, c := range []struct{ id, secret, code string }{
		{route53fake.DefaultAccessKeyID, "other-secret", "InvalidClientTokenId"},
		{"AKIDOTHER", "wrong-secret", "SignatureDoesNotMatch"},
	} {
		_, err := newProvider(t, fake, c.id, c.secret).ListZones(ctx)
		if !errors.Is(err, provider.ErrInvalidCredentials) || !strings.Contains(err.Error(), c.code) {
			t.Errorf("%s/%s: %v, want ErrInvalidCredentials with %s", c.id, c.secret, err, c.code)
		}
	}
	if _, err := newProvider(t, fake, "AKIDOTHER", "other-secret").ListZones(ctx); err != nil {
		t.Fatalf("the accepted key pair: %v", err)
	}
	resp, err := http.Get(fake.URL + "/2013-04-01/hostedzone")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("unsigned request: %s", resp.Status)
	}
}
