package publish

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/testclient"
	"github.com/dnsplane/dnsplane/pkg/plan"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
	"github.com/dnsplane/dnsplane/pkg/registry"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

// availableLocalZone returns an embedded-server provider holding the hosted zone example.test,
// and the DNSZone a/example for it, judged ZoneAvailable, with provider Secret a/creds.
func availableLocalZone(ctx context.Context, t *testing.T) (*local.Provider, provider.Zone, *dnsv1.DNSZone) {
	t.Helper()
	p := local.New(zonedb.NewStore(zonedb.StoreOptions{Dir: t.TempDir()}), local.Options{})
	pz, err := p.EnsureZone(ctx, provider.ZoneSpec{Name: "example.test", CallerReference: "test"})
	if err != nil {
		t.Fatal(err)
	}
	z := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "example"},
		Spec: dnsv1.DNSZoneSpec{Zone: "example.test", ProviderRef: dnsv1.SecretReference{Name: "creds"}}}
	z.Status.ZoneID = pz.ID
	z.Status.Conditions = []metav1.Condition{{Type: dnsv1.ConditionZoneAvailable, Status: metav1.ConditionTrue, Reason: dnsv1.ReasonZoneAvailable}}
	return p, pz, z
}

// keyedWriters is the zone-writer set as Planner uses it (Writers): a real zonewriter.Set that
// records the keys asked for.
type keyedWriters struct {
	set  *zonewriter.Set
	keys []zonewriter.Key
}

func (w *keyedWriters) For(k zonewriter.Key, p provider.Provider) *zonewriter.Writer {
	w.keys = append(w.keys, k)
	return w.set.For(k, p)
}

// TestPlan_ResolvesEachZonesSecretAndWritesThroughItsKey (phases tested with
// fakes of the small interfaces, no envtest): Plan asks for each usable zone's provider Secret
// and plans through the writer keyed by that Secret's account and the zone ID; a Secret that
// cannot be resolved fails a publish (wrapping provider.ErrProviderNotFound) but, on release with
// nothing desired, only lists the zone as unresolved.
func TestPlan_ResolvesEachZonesSecretAndWritesThroughItsKey(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, pz, z := availableLocalZone(ctx, t)
	k := client.ObjectKeyFromObject(z)
	want := provider.RecordSet{Name: "www.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	assignment := func(desired ...provider.RecordSet) *Assignment {
		return &Assignment{ByZone: map[client.ObjectKey][]provider.RecordSet{k: desired}, Zones: map[client.ObjectKey]*dnsv1.DNSZone{k: z}}
	}
	self := registry.Contributor{OwnerID: "cluster-a", Resource: registry.Resource("DNSEndpoint", "a", "web")}

	writers := &keyedWriters{set: zonewriter.NewSet(ctx, zonewriter.Options{})}
	providers := &testclient.Providers{Res: provider.Resolved{Account: "a/creds", Provider: p}}
	plans, waiting, err := (&Planner{Providers: providers, Writers: writers}).Plan(ctx, self, plan.SingleOwner, assignment(want), false, 300)
	if err != nil || len(plans) != 1 || len(waiting) != 0 {
		t.Fatalf("Plan = %d plans, waiting %v, %v; want one plan", len(plans), waiting, err)
	}
	if got := fmt.Sprint(providers.Asked(), writers.keys); got != fmt.Sprintf("[a/creds] [{a/creds %s}]", pz.ID) {
		t.Errorf("asked, writer keys = %s; want the zone's Secret and its account with the zone ID", got)
	}
	if len(plans[0].Result.Records) == 0 {
		t.Errorf("plan %+v writes nothing, want www.example.test", plans[0].Result)
	}

	missing := &testclient.Providers{Err: fmt.Errorf("secret a/creds does not exist: %w", provider.ErrProviderNotFound)}
	planner := &Planner{Providers: missing, Writers: writers}
	if _, _, err := planner.Plan(ctx, self, plan.SingleOwner, assignment(want), false, 300); !errors.Is(err, provider.ErrProviderNotFound) {
		t.Errorf("publish with the Secret missing: %v, want ErrProviderNotFound", err)
	}
	plans, unresolved, err := planner.Plan(ctx, self, plan.SingleOwner, assignment(), true, 300)
	if err != nil || len(plans) != 0 || len(unresolved) != 1 || !strings.Contains(unresolved[0], "DNSZone a/example (example.test)") {
		t.Errorf("release with the Secret missing = %d plans, %q, %v; want the zone listed as unresolved", len(plans), unresolved, err)
	}
}
