package controllers_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
)

// TestDNSSEC_PowerDNSCSKRolloverToTheEnd: a signed child DNSZone on PowerDNS linked to a
// signed parent DNSZone on the same PowerDNS, both CSK (the child's ns1 published by a
// DNSEndpoint), has its DS written into the parent zone, and a CSK rollover asked by annotation
// runs Publish, Activate and Withdraw to the end (the new key alone at PowerDNS, its DS alone at
// the parent, Secure=True) with the rollover TTLs and both zones' SOA MINIMUM at 2 s, while a
// delv loop anchored at the parent's DS gets no answer that is not fully validated.
func TestDNSSEC_PowerDNSCSKRolloverToTheEnd(t *testing.T) {
	srv := pdnstest.Start(t)
	const ns, pzone, czone = "pdnscsk", "csk.pdns.test", "c.csk.pdns.test"
	c, parent, child := linkedPair{owner: "pdns-csk", ns: ns, pzone: pzone, czone: czone, ttl: 2 * time.Second,
		secret: pdnsSecret(ns, srv),
		// The child's name server has an address in its zone, so that its delegation is not lame.
		extra: []client.Object{endpointObj(ns, "ns1", dnsv1.Endpoint{DNSName: "ns1." + czone, RecordType: "A", Targets: dnsv1.Targets{"127.0.0.1"}})},
		onFailure: func(c *cluster, child *dnsv1.DNSZone) {
			z := &dnsv1.DNSZone{}
			_ = c.client.Get(c.ctx(), client.ObjectKeyFromObject(child), z)
			t.Logf("child conditions %+v", z.Status.Conditions)
			t.Logf("parent sets %v", pdnsSets(t, srv, pzone))
		},
	}.start(t)
	pdnsSOAMinimum(t, srv, pzone, 2)
	pdnsSOAMinimum(t, srv, czone, 2)
	w := delvWatch{addr: srv.DNSAddr, anchor: pzone + ".", zone: czone + ".", ds: parent.Status.DNSSEC.DS}
	rollUnderDelv(t, c, child, "CSK", "PowerDNS CSK rollover", w, 3*time.Minute,
		cskEnded(child.Status.DNSSEC.DS, func(st *dnsv1.DNSSECStatus, _ *metav1.Condition) error {
			if got := servedTags(t, srv.DNSAddr, czone); !slices.Equal(got, statusKeyTags(st)) {
				return fmt.Errorf("PowerDNS serves DNSKEY tags %v, want %v", got, statusKeyTags(st))
			}
			return nil
		}))
}
