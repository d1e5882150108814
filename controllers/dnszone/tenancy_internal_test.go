package dnszone

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/testclient"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// zonesClient is controller-runtime's fake client holding the DNSZones zones: the cache the
// tenancy rules list.
func zonesClient(t *testing.T, zones ...dnsv1.DNSZone) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := dnsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(s)
	for i := range zones {
		b = b.WithObjects(&zones[i])
	}
	return b.Build()
}

// tz is a tenant of the judge tables: a DNSZone created at second age of the test clock, on
// backend with zone ID id ("" for none yet).
func tz(ns, name, zone string, age int64, backend, id string, mut ...func(*dnsv1.DNSZone)) tenant {
	z := dz(ns, name, zone)
	z.CreationTimestamp = metav1.NewTime(time.Unix(1_000+age, 0))
	for _, m := range mut {
		m(&z)
	}
	return tenant{z: &z, backend: backend, zoneID: id}
}

func sharingWith(ns ...string) func(*dnsv1.DNSZone) {
	return func(z *dnsv1.DNSZone) { z.Spec.Sharing = &dnsv1.Sharing{AllowedNamespaces: ns} }
}

func delegatingTo(ns ...string) func(*dnsv1.DNSZone) {
	return func(z *dnsv1.DNSZone) { z.Spec.Delegation = &dnsv1.Delegation{AllowedNamespaces: ns} }
}

func refusedByProvider(z *dnsv1.DNSZone) {
	z.Status.Conditions = []metav1.Condition{{Type: dnsv1.ConditionZoneAvailable, Status: metav1.ConditionFalse, Reason: dnsv1.ReasonZoneConflict}}
}

const (
	embedded = "dnsplane.io/local"
	pdnsA    = "dnsplane.io/pdns http://127.0.0.1:8081 server localhost"
	pdnsB    = "dnsplane.io/pdns http://127.0.0.1:9081 server localhost"
)

// TestJudge_TenancyRules pins the tenancy rules (docs/api.md, "Tenancy") on the cases that define them:
// adoption of another namespace's hosted zone, a zone inside another namespace's zone, and the
// order that decides the holder.
func TestJudge_TenancyRules(t *testing.T) {
	holderA := tz("tenant-a", "mt", "mt.test", 0, embedded, "mt.test")
	tests := []struct {
		name    string
		self    tenant
		others  []tenant
		sharing bool
		reason  string
		says    []string // substrings of the message
	}{
		{"adopting another namespace's embedded zone: ZoneConflict",
			tz("tenant-b", "mt", "mt.test", 5, embedded, "mt.test"), []tenant{holderA}, true,
			dnsv1.ReasonZoneConflict, []string{"DNSZone tenant-a/mt holds it", "namespace tenant-b", "sharing.allowedNamespaces"}},
		{"the holder itself is served", holderA, []tenant{tz("tenant-b", "mt", "mt.test", 5, embedded, "mt.test")}, true, "", nil},
		{"the holder lists the namespace in sharing.allowedNamespaces",
			tz("tenant-b", "mt", "mt.test", 5, embedded, "mt.test"),
			[]tenant{tz("tenant-a", "mt", "mt.test", 0, embedded, "mt.test", sharingWith("tenant-b"))}, true, "", nil},
		{"sharing listing another namespace does not help",
			tz("tenant-b", "mt", "mt.test", 5, embedded, "mt.test"),
			[]tenant{tz("tenant-a", "mt", "mt.test", 0, embedded, "mt.test", sharingWith("tenant-c"))}, true, dnsv1.ReasonZoneConflict, nil},
		{"same namespace never conflicts",
			tz("tenant-a", "mt2", "mt.test", 5, embedded, "mt.test"), []tenant{holderA}, true, "", nil},
		{"PowerDNS: two Secrets of one server are one account",
			tz("tenant-b", "mt", "mt.test", 5, pdnsA, "mt.test."), []tenant{tz("tenant-a", "mt", "mt.test", 0, pdnsA, "mt.test.")}, true,
			dnsv1.ReasonZoneConflict, []string{"tenant-a/mt"}},
		{"PowerDNS: another server is another hosted zone",
			tz("tenant-b", "mt", "mt.test", 5, pdnsB, "mt.test."), []tenant{tz("tenant-a", "mt", "mt.test", 0, pdnsA, "mt.test.")}, true, "", nil},
		{"Route 53: another zone ID of the same name is another hosted zone",
			tz("tenant-b", "mt", "mt.test", 5, "dnsplane.io/aws ", "Z2"), []tenant{tz("tenant-a", "mt", "mt.test", 0, "dnsplane.io/aws ", "Z1")}, true, "", nil},
		{"an older DNSZone without a hosted zone yet may be creating it",
			tz("tenant-b", "mt", "mt.test", 5, embedded, "mt.test"), []tenant{tz("tenant-a", "mt", "mt.test", 0, embedded, "")}, true,
			dnsv1.ReasonZoneConflict, []string{"may hold (it has no hosted zone yet)"}},
		{"an older DNSZone the provider refused holds nothing",
			tz("tenant-b", "mt", "mt.test", 5, embedded, "mt.test"), []tenant{tz("tenant-a", "mt", "mt.test", 0, embedded, "", refusedByProvider)}, true, "", nil},
		{"an unknown backend (Secret not resolved) may be the same account",
			tz("tenant-b", "mt", "mt.test", 5, embedded, "mt.test"), []tenant{tz("tenant-a", "mt", "mt.test", 0, "", "mt.test")}, true, dnsv1.ReasonZoneConflict, nil},
		{"created in the same second: namespace/name decides",
			tz("tenant-b", "mt", "mt.test", 0, embedded, "mt.test"), []tenant{tz("tenant-a", "mt", "mt.test", 0, embedded, "mt.test")}, true, dnsv1.ReasonZoneConflict, nil},
		{"created in the same second, the other way round",
			tz("tenant-a", "mt", "mt.test", 0, embedded, "mt.test"), []tenant{tz("tenant-b", "mt", "mt.test", 0, embedded, "mt.test")}, true, "", nil},
		// A newcomer in a namespace that sorts first, created in the holder's second,
		// used to take the holder's place; the one with the hosted zone got there first.
		{"same second: the newcomer without a hosted zone does not take the holder's place",
			tz("apps", "owned", "mt.test", 0, embedded, ""), []tenant{tz("tenant-a", "owned", "mt.test", 0, embedded, "mt.test")}, true,
			dnsv1.ReasonZoneConflict, []string{"DNSZone tenant-a/owned holds it", "namespace apps"}},
		{"same second: the holder is not refused for the newcomer",
			tz("tenant-a", "owned", "mt.test", 0, embedded, "mt.test"), []tenant{tz("apps", "owned", "mt.test", 0, embedded, "")}, true, "", nil},
		{"a second apart, age still decides over possession",
			tz("tenant-b", "mt", "mt.test", 1, embedded, "mt.test"), []tenant{tz("tenant-a", "mt", "mt.test", 0, embedded, "")}, true,
			dnsv1.ReasonZoneConflict, []string{"may hold (it has no hosted zone yet)"}},
		{"before its hosted zone is known only the parent rule applies",
			tz("tenant-b", "mt", "mt.test", 5, embedded, ""), []tenant{holderA}, false, "", nil},
		{"inner zone without permission: ParentNotAllowed naming the parent",
			tz("tenant-b", "sub", "sub.mt.test", 5, embedded, ""), []tenant{holderA}, false,
			dnsv1.ReasonParentNotAllowed, []string{"zone sub.mt.test is inside zone mt.test of DNSZone tenant-a/mt", "namespace tenant-b", "delegation.allowedNamespaces"}},
		{"inner zone on another provider needs the permission too",
			tz("tenant-b", "sub", "sub.mt.test", 5, pdnsA, ""), []tenant{holderA}, false, dnsv1.ReasonParentNotAllowed, nil},
		{"inner zone with permission",
			tz("tenant-b", "sub", "sub.mt.test", 5, embedded, ""), []tenant{tz("tenant-a", "mt", "mt.test", 0, embedded, "mt.test", delegatingTo("tenant-b"))}, false, "", nil},
		{"inner zone of the same namespace",
			tz("tenant-a", "sub", "sub.mt.test", 5, embedded, ""), []tenant{holderA}, false, "", nil},
		{"an inner zone older than the outer one stays",
			tz("tenant-b", "sub", "sub.mt.test", 0, embedded, "sub.mt.test"), []tenant{tz("tenant-a", "mt", "mt.test", 5, embedded, "mt.test")}, true, "", nil},
		{"the nearest parent decides: a permitted middle zone may sublet",
			tz("tenant-c", "x", "x.sub.mt.test", 9, embedded, ""),
			[]tenant{tz("tenant-a", "mt", "mt.test", 0, embedded, "mt.test", delegatingTo("tenant-b")), tz("tenant-b", "sub", "sub.mt.test", 5, embedded, "sub.mt.test", delegatingTo("tenant-c"))}, false, "", nil},
		{"a refused middle zone is no parent: the outer one decides",
			tz("tenant-c", "x", "x.sub.mt.test", 9, embedded, ""),
			[]tenant{holderA, tz("tenant-b", "sub", "sub.mt.test", 5, embedded, "", delegatingTo("tenant-c"))}, false,
			dnsv1.ReasonParentNotAllowed, []string{"inside zone mt.test of DNSZone tenant-a/mt"}},
		{"a refused adopter is no holder for later ones",
			tz("tenant-c", "mt", "mt.test", 9, embedded, "mt.test"),
			[]tenant{tz("tenant-a", "mt", "mt.test", 0, embedded, "mt.test", sharingWith("tenant-c")), tz("tenant-b", "mt", "mt.test", 5, embedded, "mt.test")}, true, "", nil},
		{"a sibling or label-unaligned zone is no parent",
			tz("tenant-b", "sub", "sub.mt.test", 5, embedded, ""), []tenant{tz("tenant-a", "x", "xmt.test", 0, embedded, ""), tz("tenant-a", "s", "other.mt.test", 0, embedded, "")}, false, "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := judge(tc.self, tc.others, tc.sharing)
			if v.reason != tc.reason {
				t.Fatalf("reason %q (%s), want %q", v.reason, v.message, tc.reason)
			}
			for _, s := range tc.says {
				if !strings.Contains(v.message, s) {
					t.Errorf("message %q does not say %q", v.message, s)
				}
			}
		})
	}
}

// TestTenantsOf_SameZoneAndInnerZonesOfOtherNamespaces: a DNSZone's change wakes the DNSZones
// whose verdict it may decide, and only those.
func TestTenantsOf_SameZoneAndInnerZonesOfOtherNamespaces(t *testing.T) {
	a := dz("tenant-a", "mt", "mt.test")
	all := []dnsv1.DNSZone{a, dz("tenant-a", "own", "own.mt.test"), dz("tenant-b", "mt", "mt.test"), dz("tenant-b", "sub", "sub.mt.test"),
		dz("tenant-b", "other", "other.test"), dz("tenant-c", "unaligned", "xmt.test")}
	var got []string
	for _, r := range tenantsOf(&a, all) {
		got = append(got, r.String())
	}
	if want := "tenant-b/mt tenant-b/sub"; strings.Join(got, " ") != want {
		t.Fatalf("tenantsOf = %v, want %s", got, want)
	}
}

// TestReconcileZone_RefusedZoneAsksNoProvider: a zone inside another namespace's zone without its
// permission is ParentNotAllowed before anything is created: no provider call (the fake's
// provider is nil, so any call would panic), no zone writer, no DNS query, no zone ID.
func TestReconcileZone_RefusedZoneAsksNoProvider(t *testing.T) {
	parent := dz("tenant-a", "mt", "mt.test")
	parent.CreationTimestamp = metav1.NewTime(time.Unix(1_000, 0))
	dns := &fakeDNS{}
	r := &Reconciler{Client: zonesClient(t, parent), Providers: &testclient.Providers{Res: provider.Resolved{Account: "tenant-b/dns", Backend: embedded}},
		Writers: testclient.NoWriters{T: t}, DNS: dns, SOAPollInterval: time.Second, ResyncInterval: time.Hour}
	sub := dz("tenant-b", "sub", "sub.mt.test")
	sub.CreationTimestamp = metav1.NewTime(time.Unix(2_000, 0))
	res, err := r.reconcileZone(context.Background(), &sub)
	if err != nil || res.RequeueAfter != time.Hour {
		t.Fatalf("reconcileZone = %+v, %v; want a judgement again after the resync interval", res, err)
	}
	c := meta.FindStatusCondition(sub.Status.Conditions, dnsv1.ConditionZoneAvailable)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != dnsv1.ReasonParentNotAllowed || !strings.Contains(c.Message, "tenant-a/mt") {
		t.Fatalf("ZoneAvailable = %+v, want False ParentNotAllowed naming tenant-a/mt", c)
	}
	if sub.Status.ZoneID != "" || len(dns.asked) != 0 {
		t.Fatalf("zone ID %q, DNS asked %v; want neither", sub.Status.ZoneID, dns.asked)
	}
}

// TestReconcileNormal_RefusedChildSaysDelegationNotAllowed: a child zone with linkToParentDomain
// inside another namespace's zone that does not list its namespace is refused by the tenancy
// rule (ParentNotAllowed) and its parent link by the same parent: ParentLinkCreated says
// DelegationNotAllowed, naming the parent and the namespace (docs/api.md, "Parent link"), not
// AwaitingParent; a link DNSEndpoint left from an earlier permission is deleted.
func TestReconcileNormal_RefusedChildSaysDelegationNotAllowed(t *testing.T) {
	parent := dz("tenant-a", "mt", "mt.test")
	parent.CreationTimestamp = metav1.NewTime(time.Unix(1_000, 0))
	parent.Spec.Delegation = &dnsv1.Delegation{AllowedNamespaces: []string{"tenant-c"}}
	link := dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-b", Name: "sub" + ParentLinkSuffix}}
	c := zonesClient(t, parent)
	if err := c.Create(context.Background(), &link); err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: c, Providers: &testclient.Providers{Res: provider.Resolved{Account: "tenant-b/dns", Backend: embedded}},
		Writers: testclient.NoWriters{T: t}, DNS: &fakeDNS{}, SOAPollInterval: time.Second, ResyncInterval: time.Hour}
	sub := dz("tenant-b", "sub", "sub.mt.test")
	sub.CreationTimestamp = metav1.NewTime(time.Unix(2_000, 0))
	sub.Spec.LinkToParentDomain = true
	if _, err := r.reconcileNormal(context.Background(), &sub); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(sub.Status.Conditions, dnsv1.ConditionZoneAvailable); c == nil || c.Reason != dnsv1.ReasonParentNotAllowed {
		t.Fatalf("ZoneAvailable = %+v, want ParentNotAllowed", c)
	}
	l := meta.FindStatusCondition(sub.Status.Conditions, dnsv1.ConditionParentLinkCreated)
	if l == nil || l.Status != metav1.ConditionFalse || l.Reason != dnsv1.ReasonDelegationNotAllowed ||
		!strings.Contains(l.Message, "tenant-a/mt") || !strings.Contains(l.Message, "namespace tenant-b") {
		t.Fatalf("ParentLinkCreated = %+v, want False DelegationNotAllowed naming tenant-a/mt and namespace tenant-b", l)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(&link), &link); err == nil {
		t.Fatalf("the parent link into a parent that does not allow the namespace is kept")
	}
}
