package publish

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

func zoneObj(ns, name, zone string, allowed ...string) *dnsv1.DNSZone {
	z := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: dnsv1.DNSZoneSpec{Zone: zone}}
	if allowed != nil {
		z.Spec.Delegation = &dnsv1.Delegation{AllowedNamespaces: allowed}
	}
	return z
}

func TestAssignZones_ChoosesZoneOrSaysWhy(t *testing.T) {
	apex := zoneObj("apps", "apex", "example.test")
	sub := zoneObj("apps", "sub", "sub.example.test")
	gone := zoneObj("apps", "gone", "gone.example.test")
	gone.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	parent := zoneObj("infra", "parent", "parent.test", "apps")
	closed := zoneObj("infra", "closed", "closed.test")
	local := []dnsv1.DNSZone{*apex, *sub, *gone}
	a := func(name, typ string, t ...string) dnsv1.Endpoint {
		return dnsv1.Endpoint{DNSName: name, RecordType: typ, Targets: t}
	}
	key := func(z *dnsv1.DNSZone) client.ObjectKey { return client.ObjectKeyFromObject(z) }
	tests := []struct {
		name    string
		cands   Candidates
		eps     []dnsv1.Endpoint
		byZone  map[client.ObjectKey][]string // record-set names
		zones   []client.ObjectKey
		invalid int
		denied  int
		missing bool
	}{
		{name: "longest suffix wins; a zone being deleted holds nothing",
			cands:  Candidates{Namespace: "apps", Local: local},
			eps:    []dnsv1.Endpoint{a("www.example.test", "A", "192.0.2.1"), a("api.sub.example.test", "A", "192.0.2.2"), a("x.gone.example.test", "A", "192.0.2.3")},
			byZone: map[client.ObjectKey][]string{key(apex): {"www.example.test", "x.gone.example.test"}, key(sub): {"api.sub.example.test"}},
			zones:  []client.ObjectKey{key(apex), key(sub)}},
		{name: "no zone holds the name, or it does not convert: Invalid",
			cands:   Candidates{Namespace: "apps", Local: local},
			eps:     []dnsv1.Endpoint{a("www.other.test", "A", "192.0.2.1"), a("www.example.test", "A", "not-an-address")},
			invalid: 2},
		{name: "held zones are planned even when nothing goes there",
			cands: Candidates{Namespace: "apps", Local: local, Held: []*dnsv1.DNSZone{closed}},
			zones: []client.ObjectKey{key(closed)}},
		{name: "zoneRef gone: Missing",
			cands:   Candidates{Namespace: "apps", Local: local, RefKey: &client.ObjectKey{Namespace: "apps", Name: "nope"}},
			eps:     []dnsv1.Endpoint{a("www.example.test", "A", "192.0.2.1")},
			missing: true},
		{name: "another namespace's zone not allowing this one: all Denied",
			cands:  Candidates{Namespace: "apps", Local: local, RefKey: &client.ObjectKey{Namespace: "infra", Name: "closed"}, Ref: closed},
			eps:    []dnsv1.Endpoint{a("a.closed.test", "NS", "ns1.a.closed.test"), a("b.closed.test", "NS", "ns1.b.closed.test")},
			denied: 2},
		{name: "allowed cross-namespace zone: NS below the apex and its glue only",
			cands: Candidates{Namespace: "apps", Local: local, RefKey: &client.ObjectKey{Namespace: "infra", Name: "parent"}, Ref: parent},
			eps: []dnsv1.Endpoint{a("child.parent.test", "NS", "ns1.child.parent.test"), a("ns1.child.parent.test", "A", "192.0.2.1"),
				a("www.parent.test", "A", "192.0.2.2"), a("parent.test", "NS", "ns1.parent.test")},
			byZone: map[client.ObjectKey][]string{key(parent): {"child.parent.test", "ns1.child.parent.test"}},
			zones:  []client.ObjectKey{key(parent)},
			denied: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := AssignZones(&tc.cands, tc.eps, 300)
			if len(got.Invalid) != tc.invalid || len(got.Denied) != tc.denied || (got.Missing != "") != tc.missing {
				t.Fatalf("Invalid %q Denied %q Missing %q; want %d, %d, missing %v", got.Invalid, got.Denied, got.Missing, tc.invalid, tc.denied, tc.missing)
			}
			names := map[client.ObjectKey][]string{}
			for k, rss := range got.ByZone {
				for _, rs := range rss {
					names[k] = append(names[k], rs.Name)
				}
			}
			if len(names) != len(tc.byZone) {
				t.Fatalf("ByZone = %v, want %v", names, tc.byZone)
			}
			for k, want := range tc.byZone {
				if !slices.Equal(names[k], want) {
					t.Fatalf("ByZone[%s] = %v, want %v", k, names[k], want)
				}
			}
			var zones []client.ObjectKey
			for k := range got.Zones {
				zones = append(zones, k)
			}
			slices.SortFunc(zones, func(x, y client.ObjectKey) int { return compareKeys(x, y) })
			if !slices.Equal(zones, tc.zones) {
				t.Fatalf("Zones = %v, want %v", zones, tc.zones)
			}
		})
	}
}

func compareKeys(x, y client.ObjectKey) int {
	switch xs, ys := x.String(), y.String(); {
	case xs < ys:
		return -1
	case xs > ys:
		return 1
	}
	return 0
}

// TestListCandidates_ReadsNamespaceHeldAndRef reads through controller-runtime's fake client:
// the namespace's zones by one List, other namespaces' held and zoneRef zones by Get, a zone
// being deleted or absent as nil, a malformed held entry skipped.
func TestListCandidates_ReadsNamespaceHeldAndRef(t *testing.T) {
	s := runtime.NewScheme()
	if err := dnsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	apex := zoneObj("apps", "apex", "example.test")
	parent := zoneObj("infra", "parent", "parent.test", "apps")
	dying := zoneObj("infra", "dying", "dying.test")
	dying.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	dying.Finalizers = []string{"dnsplane.io/test"}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(apex, parent, dying).Build()
	ref := &dnsv1.ZoneReference{Name: "parent", Namespace: "infra"}
	got, err := ListCandidates(context.Background(), c, "apps", ref, []string{"apps/apex", "infra/dying", "infra/absent", "malformed"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Local) != 1 || got.Local[0].Name != "apex" {
		t.Fatalf("Local = %v, want apps/apex", got.Local)
	}
	if len(got.Held) != 1 || got.Held[0].Name != "apex" {
		t.Fatalf("Held = %v, want apps/apex only", got.Held)
	}
	if got.RefKey == nil || *got.RefKey != (client.ObjectKey{Namespace: "infra", Name: "parent"}) || got.Ref == nil || got.Ref.Spec.Zone != "parent.test" {
		t.Fatalf("RefKey %v Ref %v, want infra/parent", got.RefKey, got.Ref)
	}
	none, err := ListCandidates(context.Background(), c, "apps", &dnsv1.ZoneReference{Name: "dying", Namespace: "infra"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if none.RefKey == nil || none.Ref != nil {
		t.Fatalf("a zoneRef to a zone being deleted: RefKey %v Ref %v, want a key and no zone", none.RefKey, none.Ref)
	}
}
