package clouddnsfake_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"testing"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/internal/testing/clouddnsfake"
	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	"github.com/dnsplane/dnsplane/internal/testing/fakedns"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/google"
)

// TestServiceAccountAndDNS: the real Cloud DNS client, given only the fake's service-account key
// file (as a dnsplane.io/google Secret gives it), gets a token from the fake's /token and creates
// a zone and a record; the fake's DNS server answers the zone's SOA (the one the fake created),
// NS and the record, NXDOMAIN with the SOA, and REFUSED once the zone is deleted.
func TestServiceAccountAndDNS(t *testing.T) {
	fake := clouddnsfake.New()
	t.Cleanup(fake.Close)
	ctx := context.Background()
	p, err := google.New(ctx, google.Config{ProjectID: "fake-project", EndpointURL: fake.URL, CredentialsJSON: fake.ServiceAccountJSON()})
	if err != nil {
		t.Fatal(err)
	}
	z, err := p.EnsureZone(ctx, provider.ZoneSpec{Name: "gcp.test", CallerReference: "ref-1"})
	if err != nil {
		t.Fatal(err)
	}
	if fake.Count("token") == 0 {
		t.Fatal("the client never asked /token for an access token")
	}
	err = p.ApplyChanges(ctx, z.ID, []provider.Change{{Action: provider.ActionCreate,
		After: &provider.RecordSet{Name: "www.gcp.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.9"}}}})
	if err != nil {
		t.Fatal(err)
	}
	addr := fake.DNSAddr()
	if r := dnstest.Ask(t, addr, "gcp.test", dns.TypeSOA); !r.Authoritative || len(r.Answer) != 1 || r.Answer[0].(*dns.SOA).Mbox != "cloud-dns-hostmaster.google.com." {
		t.Fatalf("SOA: %v", r)
	}
	if r := dnstest.Ask(t, addr, "gcp.test", dns.TypeNS); len(r.Answer) != 4 {
		t.Fatalf("NS: %v", r)
	}
	if r := dnstest.Ask(t, addr, "www.gcp.test", dns.TypeA); len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "192.0.2.9" {
		t.Fatalf("A: %v", r)
	}
	fakedns.CheckNXDOMAINThenGone(t, addr, "gcp.test", func() error { return p.DeleteZone(ctx, z.ID) })
}

// TestCredentials_OtherKeyAndUnknownToken: /token refuses an assertion signed by another key
// (400 invalid_grant), and the API refuses a bearer token it did not issue (401).
func TestCredentials_OtherKeyAndUnknownToken(t *testing.T) {
	fake := clouddnsfake.New()
	t.Cleanup(fake.Close)
	var sa map[string]string
	if err := json.Unmarshal([]byte(fake.ServiceAccountJSON()), &sa); err != nil {
		t.Fatal(err)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(other)
	sa["private_key"] = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	wrong, _ := json.Marshal(sa)
	p, err := google.New(context.Background(), google.Config{ProjectID: "fake-project", EndpointURL: fake.URL, CredentialsJSON: string(wrong)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.ListZones(context.Background()); err == nil {
		t.Fatal("a key the fake does not know was accepted")
	} else if !errors.Is(err, provider.ErrInvalidCredentials) {
		t.Fatalf("ListZones with another key: %v, want ErrInvalidCredentials", err)
	}
	req, _ := http.NewRequest(http.MethodGet, fake.URL+"/dns/v1/projects/p/managedZones", nil)
	req.Header.Set("Authorization", "Bearer made-up")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unknown bearer token: %s", resp.Status)
	}
}
