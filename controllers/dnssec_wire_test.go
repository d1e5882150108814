package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/signing"
	"github.com/dnsplane/dnsplane/internal/testing/validator"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
)

// askDO asks the suite's embedded server for name/qtype over TCP with the DO bit set.
func askDO(name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.SetEdns0(4096, true)
	c := &dns.Client{Net: "tcp", Timeout: 5 * time.Second}
	r, _, err := c.Exchange(m, dnsAddr)
	return r, err
}

// verifiedSets checks that every RRset of r's answer section of type qtype has an RRSIG that
// verifies with one of keys, and returns an error naming what does not.
func verifiedSets(r *dns.Msg, qtype uint16, keys map[uint16]*dns.DNSKEY) error {
	var set []dns.RR
	var sigs []*dns.RRSIG
	for _, rr := range r.Answer {
		switch v := rr.(type) {
		case *dns.RRSIG:
			if v.TypeCovered == qtype {
				sigs = append(sigs, v)
			}
		default:
			if rr.Header().Rrtype == qtype {
				set = append(set, rr)
			}
		}
	}
	if len(set) == 0 || len(sigs) == 0 {
		return fmt.Errorf("%s: %d records, %d RRSIGs; want both:\n%v", dns.TypeToString[qtype], len(set), len(sigs), r)
	}
	for _, sig := range sigs {
		k := keys[sig.KeyTag]
		if k == nil {
			continue
		}
		if err := sig.Verify(k, set); err != nil {
			return fmt.Errorf("%s: RRSIG by key %d does not verify: %w", dns.TypeToString[qtype], sig.KeyTag, err)
		}
		if !sig.ValidityPeriod(time.Now()) {
			return fmt.Errorf("%s: RRSIG by key %d is not valid now", dns.TypeToString[qtype], sig.KeyTag)
		}
		return nil
	}
	return fmt.Errorf("%s: no RRSIG by a key whose DS is in status.dnssec.ds", dns.TypeToString[qtype])
}

// anchoredKeys returns the DNSKEYs of r's answer whose DS is one of ds (presentation format).
func anchoredKeys(r *dns.Msg, ds []string) map[uint16]*dns.DNSKEY {
	out := map[uint16]*dns.DNSKEY{}
	for _, rr := range r.Answer {
		k, ok := rr.(*dns.DNSKEY)
		if !ok {
			continue
		}
		for _, s := range ds {
			want, err := dns.NewRR(s)
			if err != nil {
				continue
			}
			d, ok := want.(*dns.DS)
			if !ok {
				continue
			}
			if got := k.ToDS(d.DigestType); got != nil && strings.EqualFold(got.Digest, d.Digest) && got.KeyTag == d.KeyTag {
				out[k.KeyTag()] = k
			}
		}
	}
	return out
}

// hasRRSIG reports whether any section of r holds an RRSIG.
func hasRRSIG(r *dns.Msg) bool {
	for _, sec := range [][]dns.RR{r.Answer, r.Ns, r.Extra} {
		for _, rr := range sec {
			if _, ok := rr.(*dns.RRSIG); ok {
				return true
			}
		}
	}
	return false
}

// TestDNSSEC_EmbeddedServerSignsFromSecret: a DNSZone of the embedded server with
// dnssec.enabled is answered signed: with DO set, the SOA and the DNSKEY set carry RRSIGs
// that verify against the DNSKEYs whose DS is in status.dnssec.ds (the chain a resolver
// follows from the parent) and delv validates them from that DS set; a key Secret spoilt by hand leaves the zone signed with its keys;
// enabled false keeps the zone signed (Unsigning: no parent DNSZone, the DS TTL is waited out)
// until its key set records the turn-off done, and then the answers are unsigned again.
func TestDNSSEC_EmbeddedServerSignsFromSecret(t *testing.T) {
	ns := namespace(t, "dnssec-wire")
	const zone = "wire.dnssec.test."
	z := zoneObj(ns, "z", strings.TrimSuffix(zone, "."), signed(""))
	create(t, z)
	waitCondition(t, z, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonDSPending)
	if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(z), z); err != nil {
		t.Fatal(err)
	}
	ds := z.Status.DNSSEC.DS
	eventually(t, 20*time.Second, "signed SOA and DNSKEY answers", func() error {
		kr, err := askDO(zone, dns.TypeDNSKEY)
		if err != nil {
			return err
		}
		keys := anchoredKeys(kr, ds)
		if len(keys) == 0 {
			return fmt.Errorf("no DNSKEY matches status.dnssec.ds %q:\n%v", ds, kr)
		}
		if err := verifiedSets(kr, dns.TypeDNSKEY, keys); err != nil {
			return err
		}
		sr, err := askDO(zone, dns.TypeSOA)
		if err != nil {
			return err
		}
		return verifiedSets(sr, dns.TypeSOA, keys) // a CSK signs both
	})
	delvValidates(t, zone, ds)
	keptSigning(t, ns, zone, ds)
	if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(z), z); err != nil {
		t.Fatal(err)
	}
	z.Spec.DNSSEC.Enabled = false
	if err := k8s.Update(ctxT(t), z); err != nil {
		t.Fatal(err)
	}
	// No parent DNSZone: the zone stays signed for the DS TTL after the turn-off (a DS at a
	// registrar is the operator's to remove first), Secure says so, and the signer goes on.
	c := waitCondition(t, z, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonUnsigning)
	if !strings.Contains(c.Message, "registrar") {
		t.Fatalf("Unsigning message %q does not name the registrar", c.Message)
	}
	time.Sleep(2 * time.Second)
	if r, err := askDO(zone, dns.TypeSOA); err != nil || !hasRRSIG(r) {
		t.Fatalf("while unsigning, the SOA answer is not signed: %v %v", r, err)
	}
	// The key set records the turn-off as done (as once the DS TTL has passed): the signer
	// serves the zone unsigned.
	sec, ks := keySecret(t, ns, "z")
	if ks.Unsigning == nil || ks.Unsigning.Done {
		t.Fatalf("key set unsigning %+v; want a turn-off under way", ks.Unsigning)
	}
	ks.Unsigning.Done = true
	raw, err := ks.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	sec.Data[dnssec.SecretKey] = raw
	if err := k8s.Update(ctxT(t), sec); err != nil {
		t.Fatal(err)
	}
	eventually(t, 45*time.Second, "unsigned answers once the turn-off is done", func() error {
		for _, q := range []uint16{dns.TypeSOA, dns.TypeDNSKEY} {
			r, err := askDO(zone, q)
			if err != nil {
				return err
			}
			if hasRRSIG(r) {
				return fmt.Errorf("%s answer still signed:\n%v", dns.TypeToString[q], r)
			}
			if q == dns.TypeSOA && len(r.Answer) == 0 {
				return fmt.Errorf("no SOA:\n%v", r)
			}
		}
		return nil
	})
}

// keptSigning overwrites the zone's key Secret with text that is no key set and checks that,
// once the signer has read it again (signing.Reread), the zone is still signed with the keys
// whose DS is ds; then it puts the key set back.
func keptSigning(t *testing.T, ns, zone string, ds []string) {
	t.Helper()
	sec, _ := keySecret(t, ns, "z")
	good := sec.Data[dnssec.SecretKey]
	sec.Data[dnssec.SecretKey] = []byte("not a key set")
	if err := k8s.Update(ctxT(t), sec); err != nil {
		t.Fatal(err)
	}
	time.Sleep(signing.Reread + 2*time.Second)
	kr, err := askDO(zone, dns.TypeDNSKEY)
	if err != nil {
		t.Fatal(err)
	}
	keys := anchoredKeys(kr, ds)
	if err := verifiedSets(kr, dns.TypeDNSKEY, keys); err != nil {
		t.Fatalf("after the key Secret was spoilt: %v", err)
	}
	sr, err := askDO(zone, dns.TypeSOA)
	if err != nil {
		t.Fatal(err)
	}
	if err := verifiedSets(sr, dns.TypeSOA, keys); err != nil {
		t.Fatalf("after the key Secret was spoilt: %v", err)
	}
	sec.Data[dnssec.SecretKey] = good
	if err := k8s.Update(ctxT(t), sec); err != nil {
		t.Fatal(err)
	}
}

// delvValidates has BIND's delv validate the zone's SOA and a name that does not exist, asking
// the embedded server directly, with status.dnssec.ds (ds) as the zone's trust anchor: both
// "fully validated".
func delvValidates(t *testing.T, zone string, ds []string) {
	t.Helper()
	delvValidatesUnder(t, zone, zone, ds)
}

// delvValidatesUnder has delv validate the SOA of zone and a name in it that does not exist,
// with ds, the DS set of the anchor zone (zone or a parent of it), as the trust anchor.
func delvValidatesUnder(t *testing.T, anchor, zone string, ds []string) {
	t.Helper()
	anchors := validator.DelvAnchors(t, ds)
	for _, q := range []string{zone + " SOA", "nope." + zone + " A"} {
		ctx, cancel := context.WithTimeout(ctxT(t), 30*time.Second)
		out := validator.Delv(ctx, dnsAddr, anchors, anchor, strings.Fields(q)...)
		cancel()
		if !strings.Contains(string(out), "fully validated") {
			t.Fatalf("delv %s with status.dnssec.ds as trust anchor:\n%s", q, out)
		}
	}
}
