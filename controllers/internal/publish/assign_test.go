package publish

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// TestAssignConfirm_ZoneNotYetCachedIsAwaitingNotInvalid: a DNSZone created
// a moment before its endpoints may be missing from the controller's cache. Confirm reads the
// API server: endpoints a live zone holds wait for it (Awaiting); names no zone holds stay
// InvalidEndpoint. The two readers are controller-runtime's in-memory client: the cache without
// the zone, the API server with it.
func TestAssignConfirm_ZoneNotYetCachedIsAwaitingNotInvalid(t *testing.T) {
	s := runtime.NewScheme()
	if err := dnsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	zone := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "new"},
		Spec: dnsv1.DNSZoneSpec{Zone: "new.test", ProviderRef: dnsv1.SecretReference{Name: "dns"}}}
	cache := fake.NewClientBuilder().WithScheme(s).Build()
	live := fake.NewClientBuilder().WithScheme(s).WithObjects(zone).Build()
	eps := []dnsv1.Endpoint{
		{DNSName: "api.new.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.1"}},
		{DNSName: "www.elsewhere.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.2"}},
	}
	cases := []struct {
		name         string
		live         bool
		wantInvalid  []string
		wantAwaiting []string
	}{
		{"without a live reader: the cache's word", false,
			[]string{"api.new.test A: no DNSZone in namespace default holds this name", "www.elsewhere.test A: no DNSZone in namespace default holds this name"}, nil},
		{"with a live reader", true,
			[]string{"www.elsewhere.test A: no DNSZone in namespace default holds this name"}, []string{"DNSZone default/new (new.test) to be available"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			a, err := Assign(ctx, cache, "default", nil, eps, nil, 300)
			if err != nil {
				t.Fatal(err)
			}
			var r client.Reader
			if c.live {
				r = live
			}
			if err := a.Confirm(ctx, r); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(a.Invalid, c.wantInvalid) || !slices.Equal(a.Awaiting, c.wantAwaiting) {
				t.Fatalf("invalid %q awaiting %q, want %q and %q", a.Invalid, a.Awaiting, c.wantInvalid, c.wantAwaiting)
			}
		})
	}
}

// TestStatusPlan_UpdateShowsWhatItReplaces: a DryRun reviewer sees an
// Update's old targets and TTL beside the new ones; Create and Delete carry no old values.
func TestStatusPlan_UpdateShowsWhatItReplaces(t *testing.T) {
	old := provider.RecordSet{Name: "api.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	upd := provider.RecordSet{Name: "api.example.test", Type: "A", TTL: 120, Targets: []string{"192.0.2.2", "192.0.2.3"}}
	gone := provider.RecordSet{Name: "old.example.test", Type: "TXT", TTL: 300, Targets: []string{"x"}}
	p := StatusPlan("id", []provider.Change{
		{Action: provider.ActionCreate, After: &old},
		{Action: provider.ActionUpdate, Before: &old, After: &upd},
		{Action: provider.ActionDelete, Before: &gone},
	})
	want := []dnsv1.PlanChange{
		{Action: "Create", DNSName: "api.example.test", RecordType: "A", Targets: []string{"192.0.2.1"}, TTL: 60},
		{Action: "Update", DNSName: "api.example.test", RecordType: "A", Targets: []string{"192.0.2.2", "192.0.2.3"}, TTL: 120,
			OldTargets: []string{"192.0.2.1"}, OldTTL: 60},
		{Action: "Delete", DNSName: "old.example.test", RecordType: "TXT", Targets: []string{"x"}, TTL: 300},
	}
	if len(p.Changes) != len(want) {
		t.Fatalf("changes %+v", p.Changes)
	}
	for i := range want {
		g, w := p.Changes[i], want[i]
		if g.Action != w.Action || g.DNSName != w.DNSName || !slices.Equal(g.Targets, w.Targets) || g.TTL != w.TTL ||
			!slices.Equal(g.OldTargets, w.OldTargets) || g.OldTTL != w.OldTTL {
			t.Errorf("change %d = %+v, want %+v", i, g, w)
		}
	}
	if p.Counts != (dnsv1.PlanCounts{Create: 1, Update: 1, Delete: 1}) {
		t.Errorf("counts %+v", p.Counts)
	}
}
