package providertest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/azurefake"
	"github.com/dnsplane/dnsplane/internal/testing/bindtest"
	"github.com/dnsplane/dnsplane/internal/testing/clouddnsfake"
	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
	"github.com/dnsplane/dnsplane/internal/testing/route53fake"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/aws"
	"github.com/dnsplane/dnsplane/pkg/provider/azure"
	"github.com/dnsplane/dnsplane/pkg/provider/counting"
	"github.com/dnsplane/dnsplane/pkg/provider/google"
	"github.com/dnsplane/dnsplane/pkg/provider/guard"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
	"github.com/dnsplane/dnsplane/pkg/provider/pdns"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// TestBudget_ThousandEndpointChanges applies 1,000 endpoint changes (1,000 single-target A
// record sets created in one ApplyChanges, as one zone writer flush would) to every provider,
// wrapped as the factory wraps them (guard over counting, limits off), and logs the provider
// requests they cost and the apply time. The figures are for docs/design.md
// ("Provider budgets"); only correctness (every set present) is asserted.
func TestBudget_ThousandEndpointChanges(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PowerDNS and BIND")
	}
	type backend struct {
		name   string
		p      provider.Provider
		zoneID string
	}
	ctx := context.Background()
	ensure := func(t *testing.T, p provider.Provider, zone string) string {
		z, err := p.EnsureZone(ctx, provider.ZoneSpec{Name: zone, CallerReference: "budget"})
		if err != nil {
			t.Fatal(err)
		}
		return z.ID
	}
	var backends []backend
	{
		p := local.New(zonedb.NewStore(zonedb.StoreOptions{Dir: t.TempDir()}), local.Options{})
		backends = append(backends, backend{"local", p, ensure(t, p, "budget.test")})
	}
	{
		srv := pdnstest.Start(t)
		p, err := pdns.New(pdns.Config{APIURL: srv.APIURL, APIKey: srv.Key, Timeout: 60 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		backends = append(backends, backend{"pdns", p, ensure(t, p, "budget.test")})
	}
	{
		s := bindtest.Start(t)
		zone := s.AddZone(t, "budget")
		backends = append(backends, backend{"rfc2136", s.Provider(t, s.Secret), zone})
	}
	{
		fake := route53fake.New()
		t.Cleanup(fake.Close)
		p, err := aws.New(ctx, aws.Config{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret", EndpointURL: fake.URL, HTTPClient: fake.Client()})
		if err != nil {
			t.Fatal(err)
		}
		backends = append(backends, backend{"aws", p, ensure(t, p, "budget.test")})
	}
	{
		fake := clouddnsfake.New()
		t.Cleanup(fake.Close)
		p, err := google.New(ctx, google.Config{ProjectID: "budget", EndpointURL: fake.URL, HTTPClient: fake.Client()})
		if err != nil {
			t.Fatal(err)
		}
		backends = append(backends, backend{"google", p, ensure(t, p, "budget.test")})
	}
	{
		fake := azurefake.New()
		t.Cleanup(fake.Close)
		p, err := azure.New(ctx, azure.Config{SubscriptionID: "sub", ResourceGroup: "rg", TenantID: "tenant-1",
			ClientID: fake.ClientID, ClientSecret: fake.ClientSecret, EndpointURL: fake.URL, AuthorityHost: fake.URL + "/",
			Transport: fake.Client(), PollFrequency: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		backends = append(backends, backend{"azure", p, ensure(t, p, "budget.test")})
	}

	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			counted := counting.Wrap(b.p, b.name, nil)
			g := guard.New(counted, guard.Options{})
			zone := b.zoneID
			if z, err := g.GetZone(ctx, zone); err == nil {
				zone = z.Name
			}
			changes := make([]provider.Change, 0, 1000)
			for i := range 1000 {
				rs := provider.RecordSet{Name: fmt.Sprintf("h%04d.%s", i, zone), Type: "A", TTL: 60, Targets: []string{fmt.Sprintf("10.9.%d.%d", i/256, i%256)}}
				changes = append(changes, provider.Change{Action: provider.ActionCreate, After: &rs})
			}
			counted.Reset()
			start := time.Now()
			if err := g.ApplyChanges(ctx, b.zoneID, changes); err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			c := counted.Counts()
			sets, err := g.ListRecordSets(ctx, b.zoneID)
			if err != nil {
				t.Fatal(err)
			}
			if len(sets) < 1000 {
				t.Fatalf("%d record sets listed, want >= 1,000", len(sets))
			}
			t.Logf("BUDGET %s: 1,000 endpoint changes = %d write requests, %d reads; apply took %s",
				b.name, c[counting.OpApplyChanges], c[counting.OpListRecordSets]+c[counting.OpGetZone], took.Round(time.Millisecond))
		})
	}
}
