package controllers_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	dnsprovider "github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
)

// axfr transfers a zone from the suite's embedded server and returns its records without the
// SOA.
func axfr(t *testing.T, zone string) []dns.RR {
	t.Helper()
	var out []dns.RR
	for _, rr := range transfer(t, dnsAddr, zone) {
		if rr.Header().Rrtype != dns.TypeSOA {
			out = append(out, rr)
		}
	}
	return out
}

// transfer transfers zone from the DNS server at addr and returns every record, both SOAs
// included, in transfer order; it fails the test when the transfer fails.
func transfer(t *testing.T, addr, zone string) []dns.RR {
	t.Helper()
	m := new(dns.Msg)
	m.SetAxfr(dns.Fqdn(zone))
	env, err := (&dns.Transfer{}).In(m, addr)
	if err != nil {
		t.Fatalf("AXFR %s: %v", zone, err)
	}
	var out []dns.RR
	for e := range env {
		if e.Error != nil {
			t.Fatalf("AXFR %s: %v", zone, e.Error)
		}
		out = append(out, e.RR...)
	}
	return out
}

func nsTargets(rrs []dns.RR, owner string) []string {
	var out []string
	for _, rr := range rrs {
		if ns, ok := rr.(*dns.NS); ok && strings.EqualFold(ns.Hdr.Name, dns.Fqdn(owner)) {
			out = append(out, strings.TrimSuffix(ns.Ns, "."))
		}
	}
	slices.Sort(out)
	return out
}

func zoneObj(ns, name, zone string, mut func(*dnsv1.DNSZone)) *dnsv1.DNSZone {
	z := &dnsv1.DNSZone{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       dnsv1.DNSZoneSpec{Zone: zone, ProviderRef: dnsv1.SecretReference{Name: "dns"}},
	}
	if mut != nil {
		mut(z)
	}
	return z
}

func endpointObj(ns, name string, eps ...dnsv1.Endpoint) *dnsv1.DNSEndpoint {
	return &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: dnsv1.DNSEndpointSpec{PublishingSpec: dnsv1.PublishingSpec{Endpoints: eps}}}
}

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if sec, ok := o.(*corev1.Secret); ok {
			scan.AddSecret(sec) // before the manager can read it: the watch may deliver it later
		}
		if err := k8s.Create(ctxT(t), o); err != nil {
			t.Fatalf("create %s: %v", o.GetName(), err)
		}
	}
}

// updateIn re-reads obj through cl and applies mutate until the update does not conflict.
func updateIn(t *testing.T, cl client.Client, obj client.Object, mutate func()) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if err := cl.Get(ctxT(t), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate()
		return cl.Update(ctxT(t), obj)
	})
	if err != nil {
		t.Fatalf("update %s: %v", obj.GetName(), err)
	}
}

// goneIn waits until obj is no longer in cl's API server (its finalizers done).
func goneIn(t *testing.T, cl client.Client, obj client.Object) {
	t.Helper()
	eventually(t, 30*time.Second, obj.GetName()+" deleted", func() error {
		err := cl.Get(ctxT(t), client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (finalizers %v, err %v)", obj.GetFinalizers(), err)
	})
}

// update re-reads obj from the suite's API server and applies mutate until the update does not
// conflict (updateIn).
func update(t *testing.T, obj client.Object, mutate func()) {
	t.Helper()
	updateIn(t, k8s, obj, mutate)
}

// waitGone waits until obj is no longer in the suite's API server (goneIn).
func waitGone(t *testing.T, obj client.Object) {
	t.Helper()
	goneIn(t, k8s, obj)
}

// TestDelegation_ChildZoneIsLinkedFromAllowingParent is the delegation scenario: a root
// zone in dns-system allows team-a; a child in team-a becomes ZoneAvailable, ParentLinkCreated
// and Ready, and the parent's AXFR holds exactly the child's NS set.
func TestDelegation_ChildZoneIsLinkedFromAllowingParent(t *testing.T) {
	sys, team := namespace(t, "dns-system"), namespace(t, "team-a")
	root := zoneObj(sys, "root", "example.test", func(z *dnsv1.DNSZone) {
		z.Spec.Delegation = &dnsv1.Delegation{AllowedNamespaces: []string{team}}
	})
	child := zoneObj(team, "c1", "c1.example.test", func(z *dnsv1.DNSZone) { z.Spec.LinkToParentDomain = true })
	create(t, child, root) // the child first: it must not need the parent to exist or be Ready

	waitCondition(t, root, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	waitCondition(t, child, dnsv1.ConditionZoneAvailable, metav1.ConditionTrue, dnsv1.ReasonZoneAvailable)
	waitCondition(t, child, dnsv1.ConditionParentLinkCreated, metav1.ConditionTrue, dnsv1.ReasonParentLinked)
	waitCondition(t, child, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)

	if child.Status.ZoneID != local.ZoneID("c1.example.test") || len(child.Status.NameServers) == 0 {
		t.Fatalf("child status: zoneID %q nameServers %v", child.Status.ZoneID, child.Status.NameServers)
	}
	want := slices.Sorted(slices.Values(child.Status.NameServers))
	if got := nsTargets(axfr(t, "example.test"), "c1.example.test"); !slices.Equal(got, want) {
		t.Fatalf("parent AXFR NS for c1.example.test = %v, want %v", got, want)
	}
	soa := dnstest.Ask(t, dnsAddr, "c1.example.test", dns.TypeSOA)
	if !soa.Authoritative || soa.Rcode != dns.RcodeSuccess || len(soa.Answer) != 1 {
		t.Fatalf("child SOA not authoritative: %v", soa)
	}
	if child.Status.AvailableTimestamp == nil {
		t.Fatal("status.availableTimestamp not set")
	}

	// Deleting the child removes its link from the parent, then its zone.
	if err := k8s.Delete(ctxT(t), child); err != nil {
		t.Fatal(err)
	}
	waitGone(t, child)
	if got := nsTargets(axfr(t, "example.test"), "c1.example.test"); len(got) != 0 {
		t.Fatalf("parent still delegates c1 after the child was deleted: %v", got)
	}
	if r := dnstest.Ask(t, dnsAddr, "c1.example.test", dns.TypeSOA); r.Rcode != dns.RcodeNameError && r.Rcode != dns.RcodeRefused && r.Authoritative && len(r.Answer) > 0 {
		t.Fatalf("child zone still served after deletion: %v", r)
	}
	if _, err := provider.GetZone(ctxT(t), local.ZoneID("c1.example.test")); err == nil {
		t.Fatal("the child's hosted zone still exists")
	}
}

// TestDelegation_NamespaceNotAllowed: a child in a namespace the parent does not list is
// ParentNotAllowed (docs/api.md, "Tenancy"): its zone is not created, and no NS is written in
// the parent.
func TestDelegation_NamespaceNotAllowed(t *testing.T) {
	sys, other := namespace(t, "platform"), namespace(t, "team-x")
	root := zoneObj(sys, "root", "deny.test", nil)
	child := zoneObj(other, "c2", "c2.deny.test", func(z *dnsv1.DNSZone) { z.Spec.LinkToParentDomain = true })
	create(t, root, child)
	waitCondition(t, root, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	c := waitCondition(t, child, dnsv1.ConditionZoneAvailable, metav1.ConditionFalse, dnsv1.ReasonParentNotAllowed)
	if !strings.Contains(c.Message, "team-x") || !strings.Contains(c.Message, "platform/root") {
		t.Fatalf("message does not name the namespace and the parent: %q", c.Message)
	}
	waitCondition(t, child, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonParentNotAllowed)
	if got := nsTargets(axfr(t, "deny.test"), "c2.deny.test"); len(got) != 0 {
		t.Fatalf("NS written in a parent that does not allow it: %v", got)
	}
	if _, err := provider.GetZone(ctxT(t), local.ZoneID("c2.deny.test")); err == nil {
		t.Fatal("the refused child zone was created")
	}
}

// TestDNSEndpoint_PublishConflictAndDelete: a record is served, a second claim on the same name
// gets OwnershipConflict, and deleting the owner removes the record.
func TestDNSEndpoint_PublishConflictAndDelete(t *testing.T) {
	ns := namespace(t, "records")
	create(t, zoneObj(ns, "z", "rec.test", nil))
	www := endpointObj(ns, "www", dnsv1.Endpoint{DNSName: "www.rec.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.1"}})
	create(t, www)
	waitCondition(t, www, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)
	r := dnstest.Ask(t, dnsAddr, "www.rec.test", dns.TypeA)
	if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "192.0.2.1" {
		t.Fatalf("www.rec.test A = %v", r.Answer)
	}

	thief := endpointObj(ns, "thief", dnsv1.Endpoint{DNSName: "www.rec.test", RecordType: "A", Targets: dnsv1.Targets{"198.51.100.7"}})
	create(t, thief)
	c := waitCondition(t, thief, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonOwnershipConflict)
	if !strings.Contains(c.Message, "DNSEndpoint/records/www") {
		t.Fatalf("conflict message does not name the owner: %q", c.Message)
	}
	if r := dnstest.Ask(t, dnsAddr, "www.rec.test", dns.TypeA); len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "192.0.2.1" {
		t.Fatalf("the conflicting claim changed the record: %v", r.Answer)
	}

	// Deleting the owner frees the name: the object that lost the conflict takes it at once.
	if err := k8s.Delete(ctxT(t), www); err != nil {
		t.Fatal(err)
	}
	waitGone(t, www)
	waitCondition(t, thief, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)
	eventually(t, 10*time.Second, "www.rec.test taken over", func() error {
		if r := dnstest.Ask(t, dnsAddr, "www.rec.test", dns.TypeA); len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "198.51.100.7" {
			return fmt.Errorf("answer %v", r.Answer)
		}
		return nil
	})

	// Deleting the last owner removes the record.
	if err := k8s.Delete(ctxT(t), thief); err != nil {
		t.Fatal(err)
	}
	waitGone(t, thief)
	eventually(t, 10*time.Second, "www.rec.test removed", func() error {
		if r := dnstest.Ask(t, dnsAddr, "www.rec.test", dns.TypeA); len(r.Answer) != 0 {
			return fmt.Errorf("still answered: %v", r.Answer)
		}
		return nil
	})
}

// TestDNSEndpoint_DryRunApproveOnce: DryRun plans without writing; approving the plan ID applies
// it once; a later spec change is only planned.
func TestDNSEndpoint_DryRunApproveOnce(t *testing.T) {
	ns := namespace(t, "dryrun")
	create(t, zoneObj(ns, "z", "dry.test", nil))
	ep := endpointObj(ns, "app", dnsv1.Endpoint{DNSName: "app.dry.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.10"}})
	ep.Spec.Strategy = dnsv1.StrategyDryRun
	create(t, ep)
	waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonAwaitingApproval)
	if ep.Status.Plan == nil || ep.Status.Plan.Counts.Create != 1 || ep.Status.Plan.ID == "" {
		t.Fatalf("status.plan = %+v, want one create", ep.Status.Plan)
	}
	if r := dnstest.Ask(t, dnsAddr, "app.dry.test", dns.TypeA); len(r.Answer) != 0 {
		t.Fatalf("DryRun wrote a record: %v", r.Answer)
	}
	id := ep.Status.Plan.ID

	update(t, ep, func() { ep.Spec.ApprovedPlan = id })
	waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)
	if ep.Status.AppliedPlan != id {
		t.Fatalf("appliedPlan = %q, want %q", ep.Status.AppliedPlan, id)
	}
	if r := dnstest.Ask(t, dnsAddr, "app.dry.test", dns.TypeA); len(r.Answer) != 1 {
		t.Fatalf("approved plan not applied: %v", r.Answer)
	}

	update(t, ep, func() { ep.Spec.Endpoints[0].Targets = dnsv1.Targets{"192.0.2.11"} })
	waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonAwaitingApproval)
	if ep.Status.Plan.ID == id {
		t.Fatal("a changed spec kept the approved plan's ID")
	}
	if r := dnstest.Ask(t, dnsAddr, "app.dry.test", dns.TypeA); len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "192.0.2.10" {
		t.Fatalf("a change after the approval was applied: %v", r.Answer)
	}
}

// TestDNSZone_PreserveOnDeleteKeepsZoneAndLink: with preserveOnDelete only the finalizer goes.
func TestDNSZone_PreserveOnDeleteKeepsZoneAndLink(t *testing.T) {
	ns := namespace(t, "preserve")
	root := zoneObj(ns, "root", "keep.test", nil)
	child := zoneObj(ns, "c", "c.keep.test", func(z *dnsv1.DNSZone) {
		z.Spec.LinkToParentDomain = true
		z.Spec.PreserveOnDelete = true
	})
	create(t, root, child)
	waitCondition(t, child, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	if err := k8s.Delete(ctxT(t), child); err != nil {
		t.Fatal(err)
	}
	waitGone(t, child)
	if _, err := provider.GetZone(ctxT(t), local.ZoneID("c.keep.test")); err != nil {
		t.Fatalf("preserved zone was deleted: %v", err)
	}
	if got := nsTargets(axfr(t, "keep.test"), "c.keep.test"); len(got) == 0 {
		t.Fatal("preserved zone's delegation was removed")
	}
}

// TestDNSZone_MissingSecretThenCreated: a missing Secret gives ProviderNotFound; creating it is
// picked up without waiting for a resync.
func TestDNSZone_MissingSecretThenCreated(t *testing.T) {
	ns := "nosecret"
	if err := k8s.Create(ctxT(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	z := zoneObj(ns, "z", "nosecret.test", nil)
	create(t, z)
	waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonProviderNotFound)
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dns"}, Type: "dnsplane.io/local"})
	waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
}

// TestDNSZone_ForeignZoneIsNotDuplicated: a zone that exists at the provider with another caller
// reference gives ZoneConflict.
func TestDNSZone_ForeignZoneIsNotDuplicated(t *testing.T) {
	ns := namespace(t, "conflict")
	if _, err := provider.EnsureZone(ctxT(t), providerZoneSpec("taken.test", "someone-else")); err != nil {
		t.Fatal(err)
	}
	z := zoneObj(ns, "z", "taken.test", nil)
	create(t, z)
	waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonZoneConflict)
	zones, err := provider.ListZones(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, pz := range zones {
		if pz.Name == "taken.test" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d zones named taken.test, want 1", n)
	}
	if err := k8s.Delete(ctxT(t), z); err != nil {
		t.Fatal(err)
	}
	waitGone(t, z)
	if _, err := provider.GetZone(ctxT(t), local.ZoneID("taken.test")); err != nil {
		t.Fatalf("deleting the conflicting DNSZone removed the foreign zone: %v", errors.Unwrap(err))
	}
}

// TestDNSZone_CrashAfterCreateLeavesOneZone: a crash between the provider's zone creation and the
// status update (a fault hook, not a sleep) is recovered by the caller reference: the retry finds
// the same zone instead of reporting ZoneConflict or making a second one.
func TestDNSZone_CrashAfterCreateLeavesOneZone(t *testing.T) {
	ns := namespace(t, "crash")
	faults.failNext(local.FaultAfterZoneCreate, "crash.test")
	z := zoneObj(ns, "z", "crash.test", nil)
	create(t, z)
	waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	zones, err := provider.ListZones(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, pz := range zones {
		if pz.Name == "crash.test" {
			found = append(found, pz.ID+" ref="+pz.CallerReference)
		}
	}
	if len(found) != 1 || !strings.HasSuffix(found[0], string(z.UID)) {
		t.Fatalf("zones named crash.test: %v; want exactly one with caller reference %s", found, z.UID)
	}
}

// TestDelegation_TamperedParentIsRepairedAfterScrape: changing the parent's NS set behind
// dnsplane's back is seen by the next scrape (2 s in this suite) and re-published.
func TestDelegation_TamperedParentIsRepairedAfterScrape(t *testing.T) {
	ns := namespace(t, "tamper")
	root := zoneObj(ns, "root", "tamper.test", nil)
	child := zoneObj(ns, "c", "c.tamper.test", func(z *dnsv1.DNSZone) { z.Spec.LinkToParentDomain = true })
	create(t, root, child)
	waitCondition(t, child, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	want := slices.Sorted(slices.Values(child.Status.NameServers))

	sets, err := provider.ListRecordSets(ctxT(t), local.ZoneID("tamper.test"))
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range sets {
		if rs.Name == "c.tamper.test" && rs.Type == "NS" {
			evil := rs.Clone()
			evil.Targets = []string{"ns.attacker.example"}
			if err := provider.ApplyChanges(ctxT(t), local.ZoneID("tamper.test"), []dnsprovider.Change{{Action: dnsprovider.ActionUpdate, Before: &rs, After: &evil}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := nsTargets(axfr(t, "tamper.test"), "c.tamper.test"); slices.Equal(got, want) {
		t.Fatal("tampering did not take")
	}
	eventually(t, 20*time.Second, "delegation repaired", func() error {
		if got := nsTargets(axfr(t, "tamper.test"), "c.tamper.test"); !slices.Equal(got, want) {
			return fmt.Errorf("parent NS = %v, want %v", got, want)
		}
		return nil
	})
	// The condition turns True at the parent's next scrape, which the scraper's backoff after
	// the tampering may put past waitCondition's 30 s on a loaded machine: wait up to 2 min.
	eventually(t, 2*time.Minute, "c ParentLinkCreated=True/ParentLinked after the repair", func() error {
		if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(child), child); err != nil {
			return err
		}
		c := meta.FindStatusCondition(child.Status.Conditions, dnsv1.ConditionParentLinkCreated)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != dnsv1.ReasonParentLinked {
			return fmt.Errorf("ParentLinkCreated = %v", c)
		}
		return nil
	})
}

// TestDNSEndpoint_ZoneRefToMissingZoneWaits: a zoneRef to a DNSZone that does not exist gives
// ZoneNotFound; the zone's arrival publishes the endpoint without a spec change.
func TestDNSEndpoint_ZoneRefToMissingZoneWaits(t *testing.T) {
	ns := namespace(t, "late")
	ep := endpointObj(ns, "api", dnsv1.Endpoint{DNSName: "api.late.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.20"}})
	ep.Spec.ZoneRef = &dnsv1.ZoneReference{Name: "late"}
	create(t, ep)
	c := waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonZoneNotFound)
	if !strings.Contains(c.Message, "late/late") {
		t.Fatalf("message does not name the zone: %q", c.Message)
	}
	create(t, zoneObj(ns, "late", "late.test", nil))
	waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)
	if r := dnstest.Ask(t, dnsAddr, "api.late.test", dns.TypeA); len(r.Answer) != 1 {
		t.Fatalf("api.late.test A = %v", r.Answer)
	}
}

// TestDNSEndpoint_CrossNamespaceWritesOnlyDelegations: another namespace's zone that allows us
// accepts NS and glue below its apex, and refuses anything else with DelegationNotAllowed.
func TestDNSEndpoint_CrossNamespaceWritesOnlyDelegations(t *testing.T) {
	owner, guest := namespace(t, "cross-owner"), namespace(t, "cross-guest")
	root := zoneObj(owner, "root", "cross.test", func(z *dnsv1.DNSZone) {
		z.Spec.Delegation = &dnsv1.Delegation{AllowedNamespaces: []string{guest}}
	})
	create(t, root)
	waitCondition(t, root, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	ref := &dnsv1.ZoneReference{Name: "root", Namespace: owner}

	ok := endpointObj(guest, "delegate",
		dnsv1.Endpoint{DNSName: "sub.cross.test", RecordType: "NS", Targets: dnsv1.Targets{"ns1.sub.cross.test"}},
		dnsv1.Endpoint{DNSName: "ns1.sub.cross.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.53"}})
	ok.Spec.ZoneRef = ref
	bad := endpointObj(guest, "hijack", dnsv1.Endpoint{DNSName: "www.cross.test", RecordType: "A", Targets: dnsv1.Targets{"203.0.113.66"}})
	bad.Spec.ZoneRef = ref
	create(t, ok, bad)
	waitCondition(t, ok, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)
	c := waitCondition(t, bad, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonDelegationNotAllowed)
	if !strings.Contains(c.Message, "www.cross.test") {
		t.Fatalf("message does not name the refused endpoint: %q", c.Message)
	}
	if got := nsTargets(axfr(t, "cross.test"), "sub.cross.test"); !slices.Equal(got, []string{"ns1.sub.cross.test"}) {
		t.Fatalf("delegation not written: %v", got)
	}
	for _, rr := range axfr(t, "cross.test") {
		if strings.HasPrefix(rr.Header().Name, "www.cross.test") {
			t.Fatalf("a guest namespace wrote %v into another namespace's zone", rr)
		}
	}
}

// TestDelegation_ParentDeletedGivesACondition: deleting a parent zone while a child is linked
// to it gives the child ParentNotFound, not a crash or a hot loop.
func TestDelegation_ParentDeletedGivesACondition(t *testing.T) {
	ns := namespace(t, "orphan")
	root := zoneObj(ns, "root", "orphan.test", nil)
	child := zoneObj(ns, "c", "c.orphan.test", func(z *dnsv1.DNSZone) { z.Spec.LinkToParentDomain = true })
	create(t, root, child)
	waitCondition(t, child, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	if err := k8s.Delete(ctxT(t), root); err != nil {
		t.Fatal(err)
	}
	waitGone(t, root)
	waitCondition(t, child, dnsv1.ConditionParentLinkCreated, metav1.ConditionFalse, dnsv1.ReasonParentNotFound)
	waitCondition(t, child, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonParentNotFound)
	waitCondition(t, child, dnsv1.ConditionZoneAvailable, metav1.ConditionTrue, dnsv1.ReasonZoneAvailable)
}
