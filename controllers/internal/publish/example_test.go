package publish_test

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/publish"
	"github.com/dnsplane/dnsplane/pkg/plan"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
	"github.com/dnsplane/dnsplane/pkg/registry"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

// oneProvider resolves every provider Secret to the same provider.
type oneProvider struct{ p provider.Provider }

func (o oneProvider) Resolve(context.Context, string, string) (provider.Resolved, error) {
	return provider.Resolved{Account: "team/embedded", Provider: o.p}, nil
}

// A DNSEndpoint's two reconciles as the DNSEndpoint controller runs them (Options.Async): the
// first assigns its endpoint to the DNSZone example.test, plans that zone, submits the plan to
// the zone writer and returns, Submitted, with nothing set in status; once the writer has
// answered (it enqueues the object), the next plans again, finds nothing left to write, and
// gives the verdict: Published, with Ready and status.zones set.
func ExamplePlanner_Run() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The embedded provider's hosted zone, and the DNSZone that names it, available.
	prov := local.New(zonedb.NewStore(zonedb.StoreOptions{}), local.Options{})
	hosted, err := prov.EnsureZone(ctx, provider.ZoneSpec{Name: "example.test", CallerReference: "example"})
	if err != nil {
		panic(err)
	}
	zone := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "example"},
		Spec: dnsv1.DNSZoneSpec{Zone: "example.test", ProviderRef: dnsv1.SecretReference{Name: "embedded"}}}
	zone.Status.ZoneID = hosted.ID
	zone.Status.Conditions = []metav1.Condition{{Type: dnsv1.ConditionZoneAvailable, Status: metav1.ConditionTrue, Reason: dnsv1.ReasonZoneAvailable}}
	scheme := runtime.NewScheme()
	if err := dnsv1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	api := fake.NewClientBuilder().WithScheme(scheme).WithObjects(zone).Build()

	planner := &publish.Planner{Providers: oneProvider{prov}, Writers: zonewriter.NewSet(ctx, zonewriter.Options{})}
	ep := &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", Generation: 1}}
	ep.Spec.Strategy = dnsv1.StrategyFullSync
	ep.Spec.Endpoints = []dnsv1.Endpoint{{DNSName: "www.example.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.1"}}}
	inflight := publish.NewInflight()
	opts := publish.Options{
		Self: registry.Contributor{OwnerID: "example", Resource: registry.Resource("DNSEndpoint", "team", "web")},
		Mode: plan.SingleOwner, DefaultTTL: 300, Published: "1 endpoint published", Async: inflight,
	}

	out, _, err := planner.Run(ctx, api, nil, ep, opts)
	fmt.Println("first reconcile:", out.Verdict, err, len(ep.Status.Conditions))
	for inflight.Pending(client.ObjectKeyFromObject(ep)) {
		time.Sleep(time.Millisecond)
	}
	out, _, err = planner.Run(ctx, api, nil, ep, opts)
	ready := meta.FindStatusCondition(ep.Status.Conditions, dnsv1.ConditionReady)
	fmt.Println("next reconcile:", out.Verdict, err, ready.Reason, ep.Status.Zones)
	sets, err := prov.ListRecordSets(ctx, hosted.ID)
	if err != nil {
		panic(err)
	}
	for _, rs := range sets {
		if rs.Type == "A" {
			fmt.Println(rs.Name, rs.Type, rs.Targets)
		}
	}
	// Output:
	// first reconcile: Submitted <nil> 0
	// next reconcile: Published <nil> Published [team/example]
	// www.example.test A [192.0.2.1]
}
