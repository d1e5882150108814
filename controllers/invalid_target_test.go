package controllers_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
)

// TestDNSEndpoint_TargetThatDoesNotPackIsInvalidEndpoint: a target that does not pack, end to end on
// the embedded provider. A CAA tag over 255 bytes passes admission and miekg/dns's parser but
// cannot be packed: stored, it broke the zone's AXFR and every answer holding it. A tenant's DS
// whose digest does not have its digest type's length (SHA-256: 64 hex digits) is refused too.
// Each gets InvalidEndpoint naming the endpoint; nothing of it is written; the other endpoints
// are published, and the zone still answers and transfers.
func TestDNSEndpoint_TargetThatDoesNotPackIsInvalidEndpoint(t *testing.T) {
	owner, guest := namespace(t, "badtarget-owner"), namespace(t, "badtarget-guest")
	root := zoneObj(owner, "root", "badtarget.test", func(z *dnsv1.DNSZone) {
		z.Spec.Delegation = &dnsv1.Delegation{AllowedNamespaces: []string{guest}}
	})
	create(t, root)
	waitCondition(t, root, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)

	caa := endpointObj(owner, "caa",
		dnsv1.Endpoint{DNSName: "www.badtarget.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.80"}},
		dnsv1.Endpoint{DNSName: "ca.badtarget.test", RecordType: "CAA", Targets: dnsv1.Targets{"0 " + strings.Repeat("t", 256) + ` "ca.test"`}})
	const digest66 = "d6f0f8a1b2c3d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccddee" // 66 hex digits: even, so admission lets it through
	ds := endpointObj(guest, "ds",
		dnsv1.Endpoint{DNSName: "sub.badtarget.test", RecordType: "NS", Targets: dnsv1.Targets{"ns1.sub.badtarget.test"}},
		dnsv1.Endpoint{DNSName: "sub.badtarget.test", RecordType: "DS", Targets: dnsv1.Targets{"12345 13 2 " + digest66}})
	ds.Spec.ZoneRef = &dnsv1.ZoneReference{Name: "root", Namespace: owner}
	create(t, caa, ds)

	for _, tc := range []struct {
		obj  *dnsv1.DNSEndpoint
		name string
	}{{caa, "ca.badtarget.test CAA"}, {ds, "sub.badtarget.test DS"}} {
		c := waitCondition(t, tc.obj, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonInvalidEndpoint)
		if !strings.Contains(c.Message, tc.name) {
			t.Errorf("%s: message does not name the endpoint %q: %q", tc.obj.Name, tc.name, c.Message)
		}
	}
	// The valid endpoints of both objects are published beside the refused ones, and the zone
	// transfers (axfr fails the test on a transfer error) without the refused records.
	eventually(t, 30*time.Second, "valid endpoints published", func() error {
		if r := dnstest.Ask(t, dnsAddr, "www.badtarget.test", dns.TypeA); len(r.Answer) != 1 {
			return fmt.Errorf("www.badtarget.test A = %v", r.Answer)
		}
		if got := nsTargets(axfr(t, "badtarget.test"), "sub.badtarget.test"); len(got) != 1 {
			return fmt.Errorf("sub.badtarget.test NS = %v", got)
		}
		return nil
	})
	for _, rr := range axfr(t, "badtarget.test") {
		if typ := rr.Header().Rrtype; typ == dns.TypeCAA || typ == dns.TypeDS {
			t.Errorf("refused record written: %v", rr)
		}
	}
	if r := dnstest.Ask(t, dnsAddr, "sub.badtarget.test", dns.TypeDS); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 {
		t.Errorf("sub.badtarget.test DS: rcode %s, answers %v; want NODATA", dns.RcodeToString[r.Rcode], r.Answer)
	}
}

// TestPowerDNS_MalformedTargetIsInvalidEndpoint: on PowerDNS a 65-digit DS got
// ProviderError (the server's HTTP 422), and a CAA tag over 255 bytes was even accepted by
// PowerDNS and reported Published. Both are now InvalidEndpoint naming the endpoint, decided
// before any request (pkg/provider/pdns pins the request count), and the valid endpoint of the
// same object is served by PowerDNS.
func TestPowerDNS_MalformedTargetIsInvalidEndpoint(t *testing.T) {
	ns := "pdns-badtarget"
	srv := pdnsNamespace(t, ns, "PDNS_NAMESERVERS", "ns1.badtarget-pdns.test")
	z := zoneObj(ns, "z", "badtarget-pdns.test", nil)
	ep := endpointObj(ns, "mixed",
		dnsv1.Endpoint{DNSName: "www.badtarget-pdns.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.81"}},
		dnsv1.Endpoint{DNSName: "ca.badtarget-pdns.test", RecordType: "CAA", Targets: dnsv1.Targets{"0 " + strings.Repeat("t", 256) + ` "ca.test"`}})
	create(t, z, ep)
	waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	c := waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonInvalidEndpoint)
	if !strings.Contains(c.Message, "ca.badtarget-pdns.test CAA") {
		t.Errorf("message does not name the endpoint: %q", c.Message)
	}
	eventually(t, 30*time.Second, "www served by PowerDNS", func() error {
		m := new(dns.Msg)
		m.SetQuestion("www.badtarget-pdns.test.", dns.TypeA)
		r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, srv.DNSAddr)
		if err != nil || len(r.Answer) != 1 {
			return fmt.Errorf("answer %v, %v", r, err)
		}
		return nil
	})
}
