package controllers_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/dnszone"
	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
)

// TestDNSSEC_PowerDNSCSKRolloverToTheEnd: a signed child DNSZone on PowerDNS linked to a
// signed parent DNSZone on the same PowerDNS, both CSK (the child's ns1 published by a
// DNSEndpoint), has its DS written into the parent zone, and a CSK rollover asked by annotation
// runs Publish, Activate and Withdraw to the end (the new key alone at PowerDNS, its DS alone at
// the parent, Secure=True) with the rollover TTLs and both zones' SOA MINIMUM at 2 s, while a
// delv loop anchored at the parent's DS gets no answer that is not fully validated.
func TestDNSSEC_PowerDNSCSKRolloverToTheEnd(t *testing.T) {
	ttl := 2 * time.Second
	srv := pdnstest.Start(t)
	c := startClusterWith(t, "pdns-csk", time.Hour, 5*time.Hour, clusterOptions{RolloverTTLs: dnszone.RolloverTTLs{DNSKEY: ttl, MaxZone: ttl, ParentDS: ttl}})
	const ns, pzone, czone = "pdnscsk", "csk.pdns.test", "c.csk.pdns.test"
	c.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, pdnsSecret(ns, srv))
	parent := zoneObj(ns, "p", pzone, signed(""))
	child := zoneObj(ns, "c", czone, func(z *dnsv1.DNSZone) {
		signed("")(z)
		z.Spec.LinkToParentDomain = true
	})
	// The child's name server has an address in its zone, so that its delegation is not lame.
	c.create(parent, child, endpointObj(ns, "ns1", dnsv1.Endpoint{DNSName: "ns1." + czone, RecordType: "A", Targets: dnsv1.Targets{"127.0.0.1"}}))
	t.Cleanup(func() {
		if t.Failed() {
			z := &dnsv1.DNSZone{}
			_ = c.client.Get(c.ctx(), client.ObjectKeyFromObject(child), z)
			t.Logf("child conditions %+v", z.Status.Conditions)
			t.Logf("parent sets %v", pdnsSets(t, srv, pzone))
		}
	})
	c.waitCondition(child, dnsv1.ConditionSecure, metav1.ConditionTrue, dnsv1.ReasonSecure, 2*time.Minute)
	pdnsSOAMinimum(t, srv, pzone, 2)
	pdnsSOAMinimum(t, srv, czone, 2)
	for _, z := range []*dnsv1.DNSZone{parent, child} {
		if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(z), z); err != nil {
			t.Fatal(err)
		}
	}
	oldDS := child.Status.DNSSEC.DS
	stop := make(chan struct{})
	result := delvLoop(t, srv.DNSAddr, pzone+".", czone+".", parent.Status.DNSSEC.DS, stop)
	start := time.Now()
	c.annotateIn(child, dnszone.AnnotationRollover, "CSK")
	var phases []string
	eventually(t, 3*time.Minute, "the CSK rollover's end", func() error {
		z := &dnsv1.DNSZone{}
		if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(child), z); err != nil {
			return err
		}
		st := z.Status.DNSSEC
		if st == nil {
			return fmt.Errorf("no status.dnssec")
		}
		if p := st.RolloverPhase; p != "" && !slices.Contains(phases, p) {
			phases = append(phases, p)
		}
		sec := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionSecure)
		if len(phases) < 3 || st.RolloverPhase != "" || len(st.Keys) != 1 || len(st.DS) != 1 || slices.Equal(st.DS, oldDS) ||
			sec == nil || sec.Reason != dnsv1.ReasonSecure {
			return fmt.Errorf("phases seen %v; status.dnssec %+v; Secure %+v", phases, st, sec)
		}
		if got := servedTags(t, srv.DNSAddr, czone); !slices.Equal(got, statusKeyTags(st)) {
			return fmt.Errorf("PowerDNS serves DNSKEY tags %v, want %v", got, statusKeyTags(st))
		}
		return nil
	})
	took := time.Since(start)
	close(stop)
	total, bogus, last := result()
	t.Logf("PowerDNS CSK rollover: phases %v in %s; delv answers %d, not validated %d", phases, took.Round(time.Second), total, bogus)
	if total == 0 || bogus != 0 {
		t.Fatalf("delv: %d answers, %d not fully validated; last:\n%s", total, bogus, last)
	}
}
