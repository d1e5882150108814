package controllers_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/bindtest"
	"github.com/dnsplane/dnsplane/internal/testing/conditions"
)

// bindKSKDS asks BIND at addr for zone's DNSKEY set and returns the DS (SHA-256) of each key with
// flags 257, as "<tag> <alg> <type> <DIGEST>", sorted.
func bindKSKDS(addr, zone string) ([]string, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(zone), dns.TypeDNSKEY)
	r, _, err := (&dns.Client{Net: "tcp", Timeout: 3 * time.Second}).Exchange(m, addr)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, rr := range r.Answer {
		if k, ok := rr.(*dns.DNSKEY); ok && k.Flags == 257 {
			d := k.ToDS(dns.SHA256)
			out = append(out, fmt.Sprintf("%d %d %d %s", d.KeyTag, d.Algorithm, d.DigestType, strings.ToUpper(d.Digest)))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no DNSKEY with flags 257 in %v", r.Answer)
	}
	slices.Sort(out)
	return out, nil
}

// TestDNSSEC_BINDSignedZoneDSInParentLink: an RFC 2136 zone that BIND signs itself
// (dnssec-policy) and that is linked to a signed parent DNSZone of the embedded server has the
// DS of BIND's key (flags 257), read over DNS, in status.dnssec.ds and in the parent zone, and
// is Secure once the parent answers it and the chain from it verifies; a zone BIND does not sign
// is NotSupported.
func TestDNSSEC_BINDSignedZoneDSInParentLink(t *testing.T) {
	srv := bindtest.Start(t)
	ns := namespace(t, "dnssec-bind")
	const pzone, czone = "bind.dnssec.test", "c.bind.dnssec.test"
	srv.AddSignedZone(t, czone)
	plain := srv.AddZone(t, "plain")
	create(t, secretObj(ns, "bind", "dnsplane.io/rfc2136", map[string]string{"RFC2136_HOST": srv.Host,
		"RFC2136_PORT": strconv.Itoa(srv.Port), "RFC2136_TSIG_KEYNAME": bindtest.KeyName, "RFC2136_TSIG_SECRET": srv.Secret,
		"DNS_ADDRESS": srv.Addr()}))
	parent := zoneObj(ns, "p", pzone, signed(""))
	child := zoneObj(ns, "c", czone, func(z *dnsv1.DNSZone) {
		usingSecret("bind")(z)
		z.Spec.ZoneID = czone
		z.Spec.LinkToParentDomain = true
		z.Spec.DNSSEC = &dnsv1.DNSSEC{Enabled: true}
	})
	unsigned := zoneObj(ns, "plain", plain, func(z *dnsv1.DNSZone) {
		usingSecret("bind")(z)
		z.Spec.ZoneID = plain
		z.Spec.DNSSEC = &dnsv1.DNSSEC{Enabled: true}
	})
	create(t, parent, child, unsigned)
	conditions.Wait(t, k8s, child, dnsv1.ConditionSecure, conditions.Want{Status: metav1.ConditionTrue, Reason: dnsv1.ReasonSecure}, 90*time.Second)
	waitCondition(t, unsigned, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonNotSupported)
	want, err := bindKSKDS(srv.Addr(), czone)
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(child), child); err != nil {
		t.Fatal(err)
	}
	if got := dsRdata(t, child.Status.DNSSEC.DS); !slices.Equal(got, want) {
		t.Fatalf("status.dnssec.ds %v; want the DS of BIND's key %v", got, want)
	}
	if got := dsIn(axfr(t, pzone), czone); !slices.Equal(got, want) {
		t.Fatalf("parent DS %v; want %v", got, want)
	}
}
