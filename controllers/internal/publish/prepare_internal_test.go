package publish

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/testclient"
	"github.com/dnsplane/dnsplane/pkg/plan"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/registry"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

// TestRun_PrepareRunsBesideTheWriteAndAFailedOneReleasesAGoneObject: Prepare (the finalizer's
// Update) runs while Run writes, so the first write does not wait for it. When it fails:
//   - the object is gone (deleted before its finalizer landed): Run releases what it wrote, since
//     no finalizer will bring the object back to do it, and returns the error;
//   - the object still exists (a conflict): the records stay for the next reconcile.
//
// Through a real local provider and zone writers, and controller-runtime's fake API client.
func TestRun_PrepareRunsBesideTheWriteAndAFailedOneReleasesAGoneObject(t *testing.T) {
	s := runtime.NewScheme()
	if err := dnsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		deleteFirst bool
		wantRecords bool
	}{
		{name: "deleted before the finalizer", deleteFirst: true, wantRecords: false},
		{name: "conflict on a live object", deleteFirst: false, wantRecords: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p, pz, z := availableLocalZone(ctx, t)
			ep := &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"},
				Spec: dnsv1.DNSEndpointSpec{PublishingSpec: dnsv1.PublishingSpec{
					Endpoints: []dnsv1.Endpoint{{DNSName: "www.example.test", RecordType: "A", Targets: []string{"192.0.2.1"}}}}}}
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(z, ep.DeepCopy()).WithStatusSubresource(z).Build()
			planner := &Planner{Providers: &testclient.Providers{Res: provider.Resolved{Account: "a/creds", Provider: p}},
				Writers: zonewriter.NewSet(ctx, zonewriter.Options{}), Live: c}

			prepared, stored := false, ep.DeepCopy() // Prepare must not read the object Run is given
			prepare := func(ctx context.Context) error {
				prepared = true
				if tc.deleteFirst {
					if err := c.Delete(ctx, stored); err != nil {
						return err
					}
					return apierrors.NewNotFound(schema.GroupResource{Group: "dnsplane.io", Resource: "dnsendpoints"}, ep.Name)
				}
				return apierrors.NewConflict(schema.GroupResource{Group: "dnsplane.io", Resource: "dnsendpoints"}, ep.Name, errors.New("changed"))
			}
			self := registry.Contributor{OwnerID: "cluster-a", Resource: registry.Resource("DNSEndpoint", "a", "web")}
			_, _, err := planner.Run(ctx, c, nil, ep, Options{Self: self, Mode: plan.SingleOwner, DefaultTTL: 300, Prepare: prepare})
			if !prepared || err == nil {
				t.Fatalf("Run: prepared %v, err %v; want Prepare called and its error returned", prepared, err)
			}
			sets, err := p.ListRecordSets(ctx, pz.ID)
			if err != nil {
				t.Fatal(err)
			}
			has := false
			for _, rs := range sets {
				if rs.Name == "www.example.test" && rs.Type == "A" {
					has = true
				}
			}
			if has != tc.wantRecords {
				t.Fatalf("www.example.test A in the zone: %v, want %v (sets %v)", has, tc.wantRecords, sets)
			}
		})
	}
}
