package azurefake_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/internal/testing/azurefake"
	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	"github.com/dnsplane/dnsplane/internal/testing/fakedns"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/azure"
)

func answers(r *dns.Msg) []string {
	var out []string
	for _, rr := range r.Answer {
		out = append(out, strings.TrimPrefix(rr.String(), rr.Header().String()))
	}
	slices.Sort(out)
	return out
}

// TestDNSAddr_ServesZonesFromTheAPIState: a zone created and written through armdns and
// azidentity answers SOA (the one the fake created), NS and every record type the fake stores,
// NXDOMAIN with the SOA, and REFUSED once the long-running delete completed.
func TestDNSAddr_ServesZonesFromTheAPIState(t *testing.T) {
	fake := azurefake.New()
	t.Cleanup(fake.Close)
	p, err := azure.New(context.Background(), azure.Config{SubscriptionID: "sub-1", ResourceGroup: "rg-1", TenantID: "tenant-1",
		ClientID: fake.ClientID, ClientSecret: fake.ClientSecret, EndpointURL: fake.URL, AuthorityHost: fake.URL + "/",
		Transport: fake.Client(), PollFrequency: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	z, err := p.EnsureZone(ctx, provider.ZoneSpec{Name: "az.test", CallerReference: "ref-1"})
	if err != nil {
		t.Fatal(err)
	}
	txt := "v=\"quoted\" " + strings.Repeat("x", 300)
	var changes []provider.Change
	for _, rs := range []provider.RecordSet{
		{Name: "www.az.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.10", "192.0.2.11"}},
		{Name: "www.az.test", Type: "AAAA", TTL: 60, Targets: []string{"2001:db8::10"}},
		{Name: "www.az.test", Type: "TXT", TTL: 60, Targets: []string{txt}},
		{Name: "alias.az.test", Type: "CNAME", TTL: 60, Targets: []string{"www.az.test"}},
		{Name: "az.test", Type: "MX", TTL: 60, Targets: []string{"10 mail.az.test"}},
		{Name: "_sip._tcp.az.test", Type: "SRV", TTL: 60, Targets: []string{"0 5 5060 sip.az.test"}},
		{Name: "az.test", Type: "CAA", TTL: 60, Targets: []string{`0 issue "letsencrypt.org"`}},
	} {
		changes = append(changes, provider.Change{Action: provider.ActionCreate, After: &rs})
	}
	if err := p.ApplyChanges(ctx, z.ID, changes); err != nil {
		t.Fatal(err)
	}
	addr := fake.DNSAddr()
	if r := dnstest.Ask(t, addr, "az.test", dns.TypeSOA); !r.Authoritative || len(r.Answer) != 1 || r.Answer[0].(*dns.SOA).Ns != "ns1-01.azure-dns.com." {
		t.Fatalf("SOA: %v", r)
	}
	for _, c := range []struct {
		name  string
		qtype uint16
		want  []string
	}{
		{"az.test", dns.TypeNS, []string{"ns1-01.azure-dns.com.", "ns2-01.azure-dns.net.", "ns3-01.azure-dns.org.", "ns4-01.azure-dns.info."}},
		{"www.az.test", dns.TypeA, []string{"192.0.2.10", "192.0.2.11"}},
		{"www.az.test", dns.TypeAAAA, []string{"2001:db8::10"}},
		{"alias.az.test", dns.TypeCNAME, []string{"www.az.test."}},
		{"az.test", dns.TypeMX, []string{"10 mail.az.test."}},
		{"_sip._tcp.az.test", dns.TypeSRV, []string{"0 5 5060 sip.az.test."}},
		{"az.test", dns.TypeCAA, []string{`0 issue "letsencrypt.org"`}},
	} {
		if got := answers(dnstest.Ask(t, addr, c.name, c.qtype)); !slices.Equal(got, c.want) {
			t.Errorf("%s %s = %v, want %v", c.name, dns.TypeToString[c.qtype], got, c.want)
		}
	}
	if r := dnstest.Ask(t, addr, "www.az.test", dns.TypeTXT); len(r.Answer) != 1 || provider.TXTValue(r.Answer[0].(*dns.TXT).Txt) != txt {
		t.Fatalf("TXT: %v", r)
	}
	fakedns.CheckNXDOMAINThenGone(t, addr, "az.test", func() error { return p.DeleteZone(ctx, z.ID) })
}
