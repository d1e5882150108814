package dnszone

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

func dz(ns, name, zone string) dnsv1.DNSZone {
	return dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: dnsv1.DNSZoneSpec{Zone: zone}}
}

func TestChooseParent_LongestProperSuffixThisNamespaceWinsTie(t *testing.T) {
	child := dz("apps", "child", "a.b.example.test")
	dying := dz("apps", "dying", "b.example.test")
	dying.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	tests := []struct {
		name string
		all  []dnsv1.DNSZone
		want string // namespace/name, "" for none
	}{
		{"longest suffix", []dnsv1.DNSZone{dz("x", "apex", "example.test"), dz("x", "b", "b.example.test")}, "x/b"},
		{"tie: this namespace", []dnsv1.DNSZone{dz("x", "b", "b.example.test"), dz("apps", "b", "b.example.test"), dz("y", "b", "b.example.test")}, "apps/b"},
		{"being deleted: skipped", []dnsv1.DNSZone{dz("x", "apex", "example.test"), dying}, "x/apex"},
		{"itself, a sibling and a label-unaligned suffix are no parent", []dnsv1.DNSZone{child, dz("x", "sibling", "x.b.example.test"), dz("x", "unaligned", "ab.example.test")}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if p := chooseParent(&child, tc.all); p != nil {
				got = p.Namespace + "/" + p.Name
			}
			if got != tc.want {
				t.Fatalf("chooseParent = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParentAllowed_OtherNamespaceMustListThisOne(t *testing.T) {
	child := dz("apps", "child", "a.example.test")
	same, open, closed, other := dz("apps", "p", "example.test"), dz("infra", "p", "example.test"), dz("infra", "p", "example.test"), dz("infra", "p", "example.test")
	open.Spec.Delegation = &dnsv1.Delegation{AllowedNamespaces: []string{"apps"}}
	other.Spec.Delegation = &dnsv1.Delegation{AllowedNamespaces: []string{"web"}}
	for _, tc := range []struct {
		name   string
		parent dnsv1.DNSZone
		want   string
	}{
		{"same namespace", same, ""},
		{"listed", open, ""},
		{"no delegation block", closed, dnsv1.ReasonDelegationNotAllowed},
		{"another namespace listed", other, dnsv1.ReasonDelegationNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, msg := parentAllowed(&child, &tc.parent)
			if reason != tc.want || (reason != "" && !strings.Contains(msg, "namespace apps")) {
				t.Fatalf("parentAllowed = %q %q, want %q", reason, msg, tc.want)
			}
		})
	}
}

func TestDesiredLink_NSSetThenGlueRefNamespaceOnlyAcross(t *testing.T) {
	child := dz("apps", "child", "a.example.test")
	child.Status.NameServers = []string{"ns1.a.example.test", "ns.provider.test"}
	glue := []dnsv1.Endpoint{{DNSName: "ns1.a.example.test", RecordType: "A", RecordTTL: linkTTL, Targets: dnsv1.Targets{"192.0.2.1"}}}
	for _, tc := range []struct {
		name   string
		parent dnsv1.DNSZone
		ref    dnsv1.ZoneReference
	}{
		{"same namespace", dz("apps", "p", "example.test"), dnsv1.ZoneReference{Name: "p"}},
		{"across", dz("infra", "p", "example.test"), dnsv1.ZoneReference{Name: "p", Namespace: "infra"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eps, ref := desiredLink(&child, &tc.parent, glue)
			want := []dnsv1.Endpoint{{DNSName: "a.example.test", RecordType: "NS", RecordTTL: linkTTL, Targets: dnsv1.Targets{"ns1.a.example.test", "ns.provider.test"}}, glue[0]}
			if !reflect.DeepEqual(eps, want) || *ref != tc.ref {
				t.Fatalf("desiredLink = %+v %+v, want %+v %+v", eps, *ref, want, tc.ref)
			}
		})
	}
}

func TestLinkPublished_ParentAvailableAndLinkReadyAtItsGeneration(t *testing.T) {
	avail := dz("infra", "p", "example.test")
	avail.Status.ZoneID = "Z1"
	avail.Status.Conditions = []metav1.Condition{{Type: dnsv1.ConditionZoneAvailable, Status: metav1.ConditionTrue}}
	link := func(gen, observed int64, c ...metav1.Condition) *dnsv1.DNSEndpoint {
		l := &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Name: "child-parent-link", Generation: gen}}
		l.Status.ObservedGeneration, l.Status.Conditions = observed, c
		return l
	}
	ready := metav1.Condition{Type: dnsv1.ConditionReady, Status: metav1.ConditionTrue}
	failed := metav1.Condition{Type: dnsv1.ConditionReady, Status: metav1.ConditionFalse, Reason: "ProviderError", Message: "denied"}
	for _, tc := range []struct {
		name   string
		parent dnsv1.DNSZone
		link   *dnsv1.DNSEndpoint
		ok     bool
		reason string
		msg    string
	}{
		{"parent without zone ID", dz("infra", "p", "example.test"), link(1, 1, ready), false, dnsv1.ReasonAwaitingParent, "is not available yet"},
		{"link not observed at its generation", avail, link(2, 1, ready), false, dnsv1.ReasonAwaitingScrape, "not published yet"},
		{"link failed", avail, link(1, 1, failed), false, dnsv1.ReasonAwaitingScrape, "not published: ProviderError: denied"},
		{"published", avail, link(1, 1, ready), true, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason, msg := linkPublished(&tc.parent, tc.link)
			if ok != tc.ok || reason != tc.reason || !strings.Contains(msg, tc.msg) {
				t.Fatalf("linkPublished = %v %q %q, want %v %q containing %q", ok, reason, msg, tc.ok, tc.reason, tc.msg)
			}
		})
	}
}

func TestLinkMessages_NameNSSetGlueAndMissingAddresses(t *testing.T) {
	child, parent := dz("apps", "child", "a.example.test"), dz("infra", "p", "example.test")
	child.Status.NameServers = []string{"ns1.a.example.test", "ns2.a.example.test"}
	d := delegation{glue: []dnsv1.Endpoint{{DNSName: "ns1.a.example.test", RecordType: "A", Targets: []string{"10.96.0.10"}}}, missing: []string{"ns2.a.example.test"}}
	if got := scrapeMessage(&child, &parent, d, false); !strings.HasPrefix(got, "waiting for the scraper") || !strings.Contains(got, "with glue ns1.a.example.test A 10.96.0.10") {
		t.Fatalf("scrapeMessage(not scraped) = %q", got)
	}
	if got := scrapeMessage(&child, &parent, d, true); !strings.HasSuffix(got, "; re-publishing") {
		t.Fatalf("scrapeMessage(scraped) = %q", got)
	}
	want := "parent zone example.test delegates a.example.test to ns1.a.example.test, ns2.a.example.test with glue ns1.a.example.test A 10.96.0.10; no address for ns2.a.example.test"
	if got := linkedMessage(&child, &parent, d); got != want {
		t.Fatalf("linkedMessage = %q, want %q", got, want)
	}
}

// TestEnsureLinkEndpoint_CreatesOwnedLabelledFullSyncLink writes through controller-runtime's
// fake client: the link DNSEndpoint carries the desired endpoints, the label, FullSync and the
// zone as its controller.
func TestEnsureLinkEndpoint_CreatesOwnedLabelledFullSyncLink(t *testing.T) {
	s := runtime.NewScheme()
	if err := dnsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	child, parent := dz("apps", "child", "a.example.test"), dz("infra", "p", "example.test")
	child.UID = "uid-child"
	child.Status.NameServers = []string{"ns.provider.test"}
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(s).WithObjects(&child).Build()}
	if _, err := r.ensureLinkEndpoint(context.Background(), &child, &parent, nil); err != nil {
		t.Fatal(err)
	}
	var got dnsv1.DNSEndpoint
	if err := r.Client.Get(context.Background(), client.ObjectKey{Namespace: "apps", Name: "child" + ParentLinkSuffix}, &got); err != nil {
		t.Fatal(err)
	}
	wantEps, wantRef := desiredLink(&child, &parent, nil)
	if !reflect.DeepEqual(got.Spec.Endpoints, wantEps) || *got.Spec.ZoneRef != *wantRef || got.Spec.Strategy != dnsv1.StrategyFullSync {
		t.Fatalf("spec = %+v", got.Spec)
	}
	if got.Labels[LabelParentLink] != "child" || len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != "uid-child" {
		t.Fatalf("labels %v owners %v", got.Labels, got.OwnerReferences)
	}
}

// TestDesiredLink_DSBesideNS: a signed child's DS set (status.dnssec.ds) is in its parent link
// beside the NS set, with the DS TTL; an unsigned child's link has no DS.
func TestDesiredLink_DSBesideNS(t *testing.T) {
	child, parent := dz("apps", "child", "a.example.test"), dz("apps", "p", "example.test")
	child.Status.NameServers = []string{"ns.provider.test"}
	child.Status.DNSSEC = &dnsv1.DNSSECStatus{DS: []string{
		"a.example.test.\t3600\tIN\tDS\t2371 13 2 1F987CC6583E92DF0890718C42",
		"a.example.test.\t3600\tIN\tDS\t9999 13 2 AB987CC6583E92DF0890718C42",
	}}
	eps, _ := desiredLink(&child, &parent, nil)
	want := []dnsv1.Endpoint{
		{DNSName: "a.example.test", RecordType: "NS", RecordTTL: linkTTL, Targets: dnsv1.Targets{"ns.provider.test"}},
		{DNSName: "a.example.test", RecordType: "DS", RecordTTL: dsTTL, Targets: dnsv1.Targets{
			"2371 13 2 1F987CC6583E92DF0890718C42", "9999 13 2 AB987CC6583E92DF0890718C42"}},
	}
	if !reflect.DeepEqual(eps, want) {
		t.Fatalf("desiredLink = %+v, want %+v", eps, want)
	}
	child.Status.DNSSEC = nil
	if eps, _ := desiredLink(&child, &parent, nil); len(eps) != 1 || eps[0].RecordType != "NS" {
		t.Fatalf("unsigned child's link = %+v; want the NS set alone", eps)
	}
}
