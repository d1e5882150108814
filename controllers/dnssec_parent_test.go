package controllers_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
)

// dsIn returns the DS records of name in the records rrs, as presentation text without the
// header ("<tag> <alg> <type> <digest>"), sorted.
func dsIn(rrs []dns.RR, name string) []string {
	var out []string
	for _, rr := range rrs {
		if d, ok := rr.(*dns.DS); ok && strings.EqualFold(d.Hdr.Name, dns.Fqdn(name)) {
			out = append(out, fmt.Sprintf("%d %d %d %s", d.KeyTag, d.Algorithm, d.DigestType, strings.ToUpper(d.Digest)))
		}
	}
	slices.Sort(out)
	return out
}

// dsRdata is the rdata of each DS of status.dnssec.ds, sorted.
func dsRdata(t *testing.T, ds []string) []string {
	t.Helper()
	var out []string
	for _, s := range ds {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatal(err)
		}
		d := rr.(*dns.DS)
		out = append(out, fmt.Sprintf("%d %d %d %s", d.KeyTag, d.Algorithm, d.DigestType, strings.ToUpper(d.Digest)))
	}
	slices.Sort(out)
	return out
}

// TestDNSSEC_DSInParentLink: a signed child DNSZone linked to a signed parent DNSZone of the
// embedded server has its DS set (status.dnssec.ds) written beside its NS set in the parent zone,
// with the DS TTL, and delv validates the child's SOA from the parent's DS as trust anchor.
func TestDNSSEC_DSInParentLink(t *testing.T) {
	ns := namespace(t, "dnssec-ds")
	const pzone, czone = "ds.dnssec.test", "c.ds.dnssec.test"
	parent := zoneObj(ns, "p", pzone, signed(""))
	child := zoneObj(ns, "c", czone, func(z *dnsv1.DNSZone) {
		signed("")(z)
		z.Spec.LinkToParentDomain = true
	})
	create(t, parent, child)
	waitCondition(t, parent, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonDSPending)
	waitCondition(t, child, dnsv1.ConditionParentLinkCreated, metav1.ConditionTrue, dnsv1.ReasonParentLinked)
	if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(child), child); err != nil {
		t.Fatal(err)
	}
	want := dsRdata(t, child.Status.DNSSEC.DS)
	eventually(t, 20*time.Second, "the child's DS in the parent zone", func() error {
		rrs := axfr(t, pzone)
		if got := dsIn(rrs, czone); !slices.Equal(got, want) {
			return fmt.Errorf("parent AXFR DS of %s = %v, want %v", czone, got, want)
		}
		for _, rr := range rrs {
			if rr.Header().Rrtype == dns.TypeDS && rr.Header().Ttl != 3600 {
				return fmt.Errorf("DS TTL %d, want 3600", rr.Header().Ttl)
			}
		}
		return nil
	})
	if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(parent), parent); err != nil {
		t.Fatal(err)
	}
	delvValidatesUnder(t, pzone+".", czone+".", parent.Status.DNSSEC.DS)
	waitCondition(t, child, dnsv1.ConditionSecure, metav1.ConditionTrue, dnsv1.ReasonSecure)

	// A CSK rollover while every write to the parent zone is held (the parent provider's writes
	// time out): the new DS never reaches the parent, ParentDS stays false, the rollover stays in
	// Publish without ParentAt, and the chain from the old DS still verifies.
	_, release := faults.holdAt(local.FaultBeforeApplyChanges, local.ZoneID(pzone))
	t.Cleanup(release)
	annotate(t, child, "dnsplane.io/rollover", "CSK")
	waitCondition(t, child, dnsv1.ConditionSecure, metav1.ConditionTrue, dnsv1.ReasonRolloverInProgress)
	time.Sleep(8 * time.Second)
	if _, ks := keySecret(t, ns, "c"); ks.Rollover == nil || ks.Rollover.Phase != dnssec.PhasePublish || !ks.Rollover.ParentAt.IsZero() {
		t.Fatalf("with the parent's writes failing, rollover %+v; want Publish, no ParentAt", ks.Rollover)
	}
	if got := dsIn(axfr(t, pzone), czone); !slices.Equal(got, want) {
		t.Fatalf("with the parent's writes failing, parent DS %v; want the old %v", got, want)
	}
	// Once the parent takes writes again, both DS are written to the parent, every parent
	// server is seen answering them (the persisted ParentAt), and the zone stays Secure=True,
	// RolloverInProgress.
	release()
	eventually(t, 30*time.Second, "the new DS at the parent, observed", func() error {
		_, ks := keySecret(t, ns, "c")
		if ks.Rollover == nil || ks.Rollover.ParentAt.IsZero() {
			return fmt.Errorf("rollover %+v; want one that saw the parent's DS", ks.Rollover)
		}
		if got := dsIn(axfr(t, pzone), czone); len(got) != 2 {
			return fmt.Errorf("parent DS of %s = %v; want the old and the new", czone, got)
		}
		return nil
	})
	waitCondition(t, child, dnsv1.ConditionSecure, metav1.ConditionTrue, dnsv1.ReasonRolloverInProgress)
}

// TestDNSSEC_CSKRolloverToTheEnd: with the rollover TTLs shortened to 2 s, a CSK rollover
// asked by annotation on a child DNSZone linked to a signed parent runs Publish, Activate and
// Withdraw to the end (the new key alone, its DS alone at the parent, Secure=True), while a
// delv loop anchored at the parent's DS gets no answer that is not fully validated.
func TestDNSSEC_CSKRolloverToTheEnd(t *testing.T) {
	const pzone, czone = "roll.dnssec.test", "c.roll.dnssec.test"
	c, parent, child := linkedPair{owner: "dnssec-roll", ns: "roll", pzone: pzone, czone: czone, ttl: 2 * time.Second}.start(t)
	w := delvWatch{addr: c.dnsAddr, anchor: pzone + ".", zone: czone + ".", ds: parent.Status.DNSSEC.DS}
	rollUnderDelv(t, c, child, "CSK", "CSK rollover", w, 3*time.Minute,
		cskEnded(child.Status.DNSSEC.DS, parentDSIs(t, c.dnsAddr, pzone, czone)))
}
