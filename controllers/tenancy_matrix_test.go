package controllers_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/conditions"
	"github.com/dnsplane/dnsplane/pkg/provider/factory"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
)

// axfrAt transfers zone from the DNS server at addr and returns every record, the SOA with its
// serial included, as text in transfer order.
func axfrAt(t *testing.T, addr, zone string) []string {
	t.Helper()
	var out []string
	for _, rr := range transfer(t, addr, zone) {
		out = append(out, rr.String())
	}
	return out
}

// TestTenancy_NamespaceBNeverWritesIntoNamespaceAsZone, one test: every
// kind that publishes, created in namespace B and aimed at the zone of namespace A's DNSZone
// (which allows no other namespace), is refused with a condition, and A's zone does not change
// by one record or one SOA serial while B's objects are created, changed and deleted. Then: B's
// own DNSZone for A's zone name is a ZoneConflict that names A, and B's DNSZone naming a Secret
// that only A holds (providerRef has no namespace; one given anyway is pruned by the API server)
// is ProviderNotFound for B's namespace, never a use of A's Secret.
func TestTenancy_NamespaceBNeverWritesIntoNamespaceAsZone(t *testing.T) {
	c := startClusterWith(t, "cluster-eu", time.Hour, time.Hour, clusterOptions{
		DNSAddr: "127.0.0.1:0", GeoTag: "eu", GslbInterval: time.Second, PeerTimeout: 500 * time.Millisecond,
	})
	const nsA, nsB, zone = "tenant-a", "apps", "owned.test" // loadBalancedApp's Service is in "apps"
	for _, ns := range []string{nsA, nsB} {
		c.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dns"}, Type: factory.TypeLocal})
	}
	c.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: nsA, Name: "a-only"}, Type: factory.TypeLocal})
	a := zoneObj(nsA, "owned", zone, nil)
	aNames := endpointObj(nsA, "names",
		dnsv1.Endpoint{DNSName: "app." + zone, RecordType: "A", Targets: dnsv1.Targets{"198.51.100.1"}},
		dnsv1.Endpoint{DNSName: "txt." + zone, RecordType: "TXT", Targets: dnsv1.Targets{"held by A"}})
	c.create(a, aNames)
	c.waitCondition(a, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 30*time.Second)
	c.waitCondition(aNames, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, 30*time.Second)
	before := axfrAt(t, c.dnsAddr, zone)
	unchanged := func(when string) {
		t.Helper()
		if got := axfrAt(t, c.dnsAddr, zone); !slices.Equal(got, before) {
			t.Fatalf("%s: A's zone changed:\nbefore %q\nafter  %q", when, before, got)
		}
	}

	// Namespace B aims every publishing kind at A's zone.
	refA := &dnsv1.ZoneReference{Name: "owned", Namespace: nsA}
	overwrite := dnsv1.Endpoint{DNSName: "app." + zone, RecordType: "A", Targets: dnsv1.Targets{"203.0.113.1"}}
	added := dnsv1.Endpoint{DNSName: "new." + zone, RecordType: "A", Targets: dnsv1.Targets{"203.0.113.2"}}
	byRef := endpointObj(nsB, "by-ref", overwrite, added)
	byRef.Spec.ZoneRef = refA
	bySuffix := endpointObj(nsB, "by-suffix", overwrite, added) // no zoneRef: B holds no zone for it
	record := &dnsv1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: nsB, Name: "record"},
		Spec: dnsv1.DNSRecordSpec{RootHost: "app." + zone, PublishingSpec: dnsv1.PublishingSpec{ZoneRef: refA, Endpoints: []dnsv1.Endpoint{overwrite}}}}
	c.loadBalancedApp(t, "203.0.113.9")
	gslbObj := &dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: nsB, Name: "app"}, Spec: dnsv1.GslbSpec{
		ResourceRef: dnsv1.ResourceReference{Kind: "Service", Name: "app"}, Hosts: []string{"app." + zone, "gslb." + zone},
		ZoneRef: *refA, Strategy: dnsv1.GslbStrategy{Type: "roundRobin", DNSTTLSeconds: 5}}}
	c.create(byRef, bySuffix, record, gslbObj)

	refused := func(obj client.Object, says string) string {
		t.Helper()
		var got string
		eventually(t, 30*time.Second, fmt.Sprintf("%T %s refused", obj, obj.GetName()), func() error {
			cond, err := conditions.Get(c.ctx(), c.client, obj, dnsv1.ConditionReady)
			if err != nil {
				return err
			}
			if cond.Status == metav1.ConditionTrue || !strings.Contains(cond.Message, says) {
				return fmt.Errorf("Ready %s %s: %q", cond.Status, cond.Reason, cond.Message)
			}
			got = cond.Reason + ": " + cond.Message
			return nil
		})
		return got
	}
	t.Logf("DNSEndpoint by zoneRef: %s", refused(byRef, "app."+zone))
	c.waitCondition(byRef, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonDelegationNotAllowed, 30*time.Second)
	t.Logf("DNSEndpoint by suffix: %s", refused(bySuffix, "app."+zone))
	t.Logf("DNSRecord: %s", refused(record, "app."+zone))
	c.waitCondition(record, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonDelegationNotAllowed, 30*time.Second)
	t.Logf("Gslb: %s", refused(gslbObj, "app."+zone))
	c.waitCondition(gslbObj, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonDelegationNotAllowed, 30*time.Second)
	unchanged("B's DNSEndpoints, DNSRecord and Gslb refused")
	if got := served(t, c.dnsAddr, "app."+zone); !slices.Equal(got, []string{"198.51.100.1"}) {
		t.Fatalf("app.%s answered %v, want A's 198.51.100.1", zone, got)
	}

	// B changes its objects, then deletes them: still nothing in A's zone.
	for _, ep := range []*dnsv1.DNSEndpoint{byRef, bySuffix} {
		updateIn(t, c.client, ep, func() { ep.Spec.Endpoints[0].Targets = dnsv1.Targets{"203.0.113.3"} })
	}
	updateIn(t, c.client, record, func() { record.Spec.Endpoints[0].Targets = dnsv1.Targets{"203.0.113.3"} })
	current := conditions.Want{Status: metav1.ConditionFalse, Reason: dnsv1.ReasonDelegationNotAllowed, Current: true}
	conditions.Wait(t, c.client, byRef, dnsv1.ConditionReady, current, 30*time.Second)
	conditions.Wait(t, c.client, record, dnsv1.ConditionReady, current, 30*time.Second)
	unchanged("B's objects changed")
	for _, o := range []client.Object{byRef, bySuffix, record, gslbObj} {
		if err := c.client.Delete(c.ctx(), o); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []client.Object{byRef, bySuffix, record, gslbObj} {
		goneIn(t, c.client, o)
	}
	unchanged("B's objects deleted")

	// Two DNSZones, one zone name: B's is a ZoneConflict that names A's, and A's zone stays.
	twin := zoneObj(nsB, "owned", zone, nil)
	c.create(twin)
	cond := c.waitCondition(twin, dnsv1.ConditionZoneAvailable, metav1.ConditionFalse, dnsv1.ReasonZoneConflict, 30*time.Second)
	// It names the holder even when created in the holder's second (this test is that fast),
	// from a namespace that sorts before the holder's: the holder has its hosted zone.
	if !strings.Contains(cond.Message, "DNSZone "+nsA+"/owned holds it") {
		t.Errorf("B's DNSZone for A's zone name: ZoneConflict %q does not name the holder %s/owned", cond.Message, nsA)
	}
	if err := c.client.Delete(c.ctx(), twin); err != nil {
		t.Fatal(err)
	}
	goneIn(t, c.client, twin)
	unchanged("B's DNSZone for the same name created and deleted")
	c.waitCondition(a, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 30*time.Second)

	// A Secret of A's, named by B: providerRef has no namespace field, and one sent anyway is
	// pruned, so B's DNSZone looks in B and finds nothing.
	steal := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": dnsv1.GroupVersion.String(), "kind": "DNSZone",
		"metadata": map[string]any{"namespace": nsB, "name": "steal"},
		"spec":     map[string]any{"zone": "steal.test", "providerRef": map[string]any{"name": "a-only", "namespace": nsA}},
	}}
	if err := c.client.Create(c.ctx(), steal); err != nil {
		t.Fatal(err)
	}
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(steal.GroupVersionKind())
	if err := c.client.Get(c.ctx(), client.ObjectKey{Namespace: nsB, Name: "steal"}, stored); err != nil {
		t.Fatal(err)
	}
	if ref, _, _ := unstructured.NestedMap(stored.Object, "spec", "providerRef"); len(ref) != 1 || ref["name"] != "a-only" {
		t.Fatalf("stored providerRef %v, want only the name", ref)
	}
	stealZone := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: nsB, Name: "steal"}}
	cond = c.waitCondition(stealZone, dnsv1.ConditionZoneAvailable, metav1.ConditionFalse, dnsv1.ReasonProviderNotFound, 30*time.Second)
	if !strings.Contains(cond.Message, "secret "+nsB+"/a-only does not exist") {
		t.Fatalf("ProviderNotFound message %q does not name the Secret %s/a-only", cond.Message, nsB)
	}
	q := new(dns.Msg)
	q.SetQuestion("steal.test.", dns.TypeSOA)
	if r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(q, c.dnsAddr); err != nil || len(r.Answer) != 0 {
		t.Fatalf("steal.test has a zone: %v %v", r, err)
	}
	unchanged("the end")
}

// TestTenancy_ChildLinkMatrix: a root zone in namespace sys allows namespace a; children with
// linkToParentDomain in a (allowed) and in b (not allowed), with the parent Ready before the
// children are created and after. The allowed child is linked either way. The child of b says
// ParentLinkCreated=False DelegationNotAllowed naming its namespace and the parent, never
// AwaitingParent: with the parent first it is also ParentNotAllowed (its zone is not created);
// created before the parent, its zone is older and stays, and only the link is refused. No NS
// set of b's child reaches the parent, and no link DNSEndpoint of it is kept. Once the parent
// lists b, b's child is linked too.
func TestTenancy_ChildLinkMatrix(t *testing.T) {
	for _, parentFirst := range []bool{true, false} {
		name := map[bool]string{true: "parent-first", false: "child-first"}[parentFirst]
		t.Run(name, func(t *testing.T) { childLinkMatrix(t, "mx-"+name, parentFirst) })
	}
}

func childLinkMatrix(t *testing.T, prefix string, parentFirst bool) {
	sys, allowed, denied := namespace(t, prefix+"-sys"), namespace(t, prefix+"-a"), namespace(t, prefix+"-b")
	zone := prefix + ".matrix.test"
	root := zoneObj(sys, "root", zone, func(z *dnsv1.DNSZone) {
		z.Spec.Delegation = &dnsv1.Delegation{AllowedNamespaces: []string{allowed}}
	})
	link := func(z *dnsv1.DNSZone) { z.Spec.LinkToParentDomain = true }
	c1, c2 := zoneObj(allowed, "c1", "c1."+zone, link), zoneObj(denied, "c2", "c2."+zone, link)
	if parentFirst {
		create(t, root)
		waitCondition(t, root, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
		create(t, c1, c2)
	} else {
		create(t, c1, c2)
		for _, c := range []*dnsv1.DNSZone{c1, c2} {
			waitCondition(t, c, dnsv1.ConditionZoneAvailable, metav1.ConditionTrue, dnsv1.ReasonZoneAvailable)
			waitCondition(t, c, dnsv1.ConditionParentLinkCreated, metav1.ConditionFalse, dnsv1.ReasonParentNotFound)
		}
		create(t, root)
		waitCondition(t, root, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	}

	waitCondition(t, c1, dnsv1.ConditionParentLinkCreated, metav1.ConditionTrue, dnsv1.ReasonParentLinked)
	waitCondition(t, c1, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	c := waitCondition(t, c2, dnsv1.ConditionParentLinkCreated, metav1.ConditionFalse, dnsv1.ReasonDelegationNotAllowed)
	mustSay(t, c, "namespace "+denied, sys+"/root", "delegation.allowedNamespaces")
	if parentFirst {
		waitCondition(t, c2, dnsv1.ConditionZoneAvailable, metav1.ConditionFalse, dnsv1.ReasonParentNotAllowed)
		waitCondition(t, c2, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonParentNotAllowed)
		if _, err := provider.GetZone(ctxT(t), local.ZoneID(c2.Spec.Zone)); err == nil {
			t.Fatal("the refused child zone was created")
		}
	} else {
		waitCondition(t, c2, dnsv1.ConditionZoneAvailable, metav1.ConditionTrue, dnsv1.ReasonZoneAvailable)
		waitCondition(t, c2, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonDelegationNotAllowed)
	}
	parent := axfr(t, zone)
	if got, want := nsTargets(parent, c1.Spec.Zone), slices.Sorted(slices.Values(c1.Status.NameServers)); !slices.Equal(got, want) {
		t.Fatalf("parent AXFR NS for %s = %v, want %v", c1.Spec.Zone, got, want)
	}
	if got := nsTargets(parent, c2.Spec.Zone); len(got) != 0 {
		t.Fatalf("NS of %s written in a parent that does not allow its namespace: %v", c2.Spec.Zone, got)
	}
	var stray dnsv1.DNSEndpoint
	if err := k8s.Get(ctxT(t), client.ObjectKey{Namespace: denied, Name: "c2-parent-link"}, &stray); err == nil {
		t.Fatalf("a parent link is kept for %s: %+v", c2.Spec.Zone, stray.Spec)
	}

	// The parent allows b: its child is created where it was refused, and linked.
	update(t, root, func() {
		root.Spec.Delegation.AllowedNamespaces = append(root.Spec.Delegation.AllowedNamespaces, denied)
	})
	waitCondition(t, c2, dnsv1.ConditionParentLinkCreated, metav1.ConditionTrue, dnsv1.ReasonParentLinked)
	waitCondition(t, c2, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
}
