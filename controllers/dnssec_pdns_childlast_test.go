package controllers_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/dnszone"
	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
)

// TestAttack_PowerDNSTurnOffNotChildLast: a PowerDNS child zone linked to a signed parent zone
// on the same PowerDNS, Secure, gets enabled: false. docs/dnssec.md "Turning it off":
// "`enabled: false`, or removing `spec.dnssec`, turns signing off child last: the DS set leaves
// the parent before the signatures leave the zone", and the zone stays signed for the DS TTL
// plus the DNSKEY TTL after every parent server answers no DS (here 2 s + 2 s). The test
// records when the parent last answered a DS and when the child is first answered unsigned.
func TestAttack_PowerDNSTurnOffNotChildLast(t *testing.T) {
	ttl := 2 * time.Second
	srv := pdnstest.Start(t)
	c := startClusterWith(t, "pdns-atk", time.Hour, 5*time.Hour, clusterOptions{RolloverTTLs: dnszone.RolloverTTLs{DNSKEY: ttl, MaxZone: ttl, ParentDS: ttl}})
	const ns, pzone, czone = "pdnsatk", "atk.pdns.test", "c.atk.pdns.test"
	c.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, pdnsSecret(ns, srv))
	parent := zoneObj(ns, "p", pzone, signed(""))
	child := zoneObj(ns, "c", czone, func(z *dnsv1.DNSZone) {
		signed("")(z)
		z.Spec.LinkToParentDomain = true
	})
	c.create(parent, child, endpointObj(ns, "ns1", dnsv1.Endpoint{DNSName: "ns1." + czone, RecordType: "A", Targets: dnsv1.Targets{"127.0.0.1"}}))
	c.waitCondition(child, dnsv1.ConditionSecure, metav1.ConditionTrue, dnsv1.ReasonSecure, 2*time.Minute)
	pdnsSOAMinimum(t, srv, pzone, 2)
	pdnsSOAMinimum(t, srv, czone, 2)
	eventually(t, 20*time.Second, "set dnssec.enabled=false", func() error {
		if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(child), child); err != nil {
			return err
		}
		child.Spec.DNSSEC.Enabled = false
		return c.client.Update(c.ctx(), child)
	})
	lastDS := time.Now()
	end := time.Now().Add(90 * time.Second)
	for time.Now().Before(end) {
		ds, err := parentDS(srv.DNSAddr, czone)
		if err != nil {
			t.Fatalf("parent DS query: %v", err)
		}
		now := time.Now()
		if len(ds) > 0 {
			lastDS = now
		}
		s, err := signedAt(srv.DNSAddr, czone)
		if err != nil {
			t.Fatalf("child SOA query: %v", err)
		}
		if !s {
			if gap := now.Sub(lastDS); gap < 3*time.Second {
				t.Fatalf("CHILD-LAST BROKEN on PowerDNS: the child is answered unsigned %s after the parent last answered its DS (%v); the DS and DNSKEY TTLs are %s",
					gap.Round(time.Millisecond), ds, 2*ttl)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the child is still signed 90 s after the turn-off")
}
