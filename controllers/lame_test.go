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

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
)

// TestPowerDNS_LameDelegationUntilTheNameServerHasAnAddress: a linked zone on
// PowerDNS without PDNS_NAMESERVERS delegates to ns1.<zone>, which has no address. That is a lame
// delegation: ParentLinkCreated=False LameDelegation, Ready=False, and nothing is written in the
// parent. The zone's SOA names ns1.<zone>, not PowerDNS' placeholder. Once an A record for
// ns1.<zone> is published in the zone, the parent serves the NS set with that glue, and the zone
// is ParentLinked and Ready.
func TestPowerDNS_LameDelegationUntilTheNameServerHasAnAddress(t *testing.T) {
	ns := "pdns-lame"
	srv := pdnsNamespace(t, ns)
	parent := zoneObj(ns, "parent", "lame.test", nil)
	child := zoneObj(ns, "child", "c.lame.test", func(z *dnsv1.DNSZone) { z.Spec.LinkToParentDomain = true })
	create(t, parent, child)
	waitCondition(t, parent, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	waitCondition(t, child, dnsv1.ConditionZoneAvailable, metav1.ConditionTrue, dnsv1.ReasonZoneAvailable)
	c := waitCondition(t, child, dnsv1.ConditionParentLinkCreated, metav1.ConditionFalse, dnsv1.ReasonLameDelegation)
	if !strings.Contains(c.Message, "ns1.c.lame.test") {
		t.Errorf("LameDelegation message does not name the name server: %s", c.Message)
	}
	waitCondition(t, child, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonLameDelegation)
	if got := pdnsSets(t, srv, "lame.test")["c.lame.test/NS"]; len(got) != 0 {
		t.Fatalf("a lame delegation was written in the parent: NS %v", got)
	}
	soa := dnstest.Ask(t, srv.DNSAddr, "c.lame.test", dns.TypeSOA)
	if len(soa.Answer) != 1 || soa.Answer[0].(*dns.SOA).Ns != "ns1.c.lame.test." {
		t.Fatalf("child SOA %v, want MNAME ns1.c.lame.test.", soa.Answer)
	}

	create(t, endpointObj(ns, "ns1", dnsv1.Endpoint{DNSName: "ns1.c.lame.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.53"}}))
	waitCondition(t, child, dnsv1.ConditionParentLinkCreated, metav1.ConditionTrue, dnsv1.ReasonParentLinked)
	waitCondition(t, child, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	sets := pdnsSets(t, srv, "lame.test")
	if got := sets["c.lame.test/NS"]; !slices.Equal(got, []string{"ns1.c.lame.test"}) {
		t.Errorf("parent NS for c.lame.test = %v", got)
	}
	if got := sets["ns1.c.lame.test/A"]; !slices.Equal(got, []string{"192.0.2.53"}) {
		t.Errorf("parent glue for ns1.c.lame.test = %v, want [192.0.2.53]", got)
	}
}

// TestPowerDNS_OutOfBailiwickNameServers: with PDNS_NAMESERVERS outside the zone, the name
// servers are looked up at DNS_ADDRESS. Names nobody serves make the delegation lame; a name that
// resolves there (its zone is on the same PowerDNS) links it, without glue.
func TestPowerDNS_OutOfBailiwickNameServers(t *testing.T) {
	srv := pdnstest.Start(t)
	ns := "pdns-oob"
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	nsZone := zoneObj(ns, "nszone", "nsprovider.test", nil)
	parent := zoneObj(ns, "parent", "oob.test", nil)
	lame := zoneObj(ns, "lame", "lame.oob.test", func(z *dnsv1.DNSZone) {
		z.Spec.LinkToParentDomain = true
		z.Spec.ProviderRef.Name = "nowhere"
	})
	good := zoneObj(ns, "good", "good.oob.test", func(z *dnsv1.DNSZone) {
		z.Spec.LinkToParentDomain = true
		z.Spec.ProviderRef.Name = "ns-provider"
	})
	nowhere := pdnsSecret(ns, srv, "PDNS_NAMESERVERS", "ns1.nowhere.test,ns2.nowhere.test")
	nowhere.Name = "nowhere"
	named := pdnsSecret(ns, srv, "PDNS_NAMESERVERS", "ns.nsprovider.test")
	named.Name = "ns-provider"
	create(t, pdnsSecret(ns, srv), nowhere, named, nsZone, parent, lame, good)
	waitCondition(t, nsZone, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	create(t, endpointObj(ns, "ns", dnsv1.Endpoint{DNSName: "ns.nsprovider.test", RecordType: "AAAA", Targets: dnsv1.Targets{"2001:db8::53"}}))

	waitCondition(t, lame, dnsv1.ConditionParentLinkCreated, metav1.ConditionFalse, dnsv1.ReasonLameDelegation)
	waitCondition(t, good, dnsv1.ConditionParentLinkCreated, metav1.ConditionTrue, dnsv1.ReasonParentLinked)
	waitCondition(t, good, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	eventually(t, 30*time.Second, "parent delegations", func() error {
		sets := pdnsSets(t, srv, "oob.test")
		if got := sets["good.oob.test/NS"]; !slices.Equal(got, []string{"ns.nsprovider.test"}) {
			return fmt.Errorf("NS good.oob.test = %v", got)
		}
		if got := sets["lame.oob.test/NS"]; len(got) != 0 {
			return fmt.Errorf("lame delegation written: NS lame.oob.test = %v", got)
		}
		return nil
	})
}

// TestDelegation_EmbeddedZoneLinksWithGlue: an embedded-provider zone's ns1.<zone> has the
// embedded server's address, so its delegation carries that glue and is ParentLinked.
func TestDelegation_EmbeddedZoneLinksWithGlue(t *testing.T) {
	ns := namespace(t, "local-glue")
	parent := zoneObj(ns, "parent", "glue.test", nil)
	child := zoneObj(ns, "child", "c.glue.test", func(z *dnsv1.DNSZone) { z.Spec.LinkToParentDomain = true })
	create(t, parent, child)
	waitCondition(t, child, dnsv1.ConditionParentLinkCreated, metav1.ConditionTrue, dnsv1.ReasonParentLinked)
	waitCondition(t, child, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	var glue []string
	for _, rr := range axfr(t, "glue.test") {
		if a, ok := rr.(*dns.A); ok && a.Hdr.Name == "ns1.c.glue.test." {
			glue = append(glue, a.A.String())
		}
	}
	if !slices.Equal(glue, []string{"127.0.0.1"}) {
		t.Fatalf("parent glue for ns1.c.glue.test = %v, want [127.0.0.1]", glue)
	}
}
