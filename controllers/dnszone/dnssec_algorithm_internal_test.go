package dnszone

import (
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/status"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
)

// TestAlgorithmChange: a zone signed with ECDSAP256SHA256 keys whose spec.dnssec.algorithm
// says ED25519 keeps its keys and says how to change the algorithm on its Secure condition;
// once its turn-off is done, the key set is dropped so that the first keys are made in ED25519.
func TestAlgorithmChange(t *testing.T) {
	now := time.Now()
	var keys []dnssec.Key
	for _, role := range []dnssec.Role{dnssec.RoleKSK, dnssec.RoleZSK} {
		k, err := dnssec.Generate("x.test.", dns.ECDSAP256SHA256, role, dnssec.Active, now)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	ks := dnssec.KeySet{Zone: "x.test.", Keys: keys}
	ed := dnssec.KeyPolicy{Algorithm: dns.ED25519, Scheme: dnssec.SchemeKSKZSK}

	signed := &dnsv1.DNSZone{}
	if got := freshAlgorithm(ks, ed, signed); len(got.Keys) != 2 {
		t.Fatalf("a signed zone's keys were dropped for an algorithm change: %d keys", len(got.Keys))
	}
	off := ks
	off.Unsigning = &dnssec.Unsigning{Since: now, ParentGoneAt: now}
	if got := freshAlgorithm(off, ed, signed); len(got.Keys) != 2 {
		t.Fatal("keys dropped before the turn-off is done")
	}
	off.Unsigning = &dnssec.Unsigning{Since: now, ParentGoneAt: now, Done: true}
	if got := freshAlgorithm(off, dnssec.KeyPolicy{Algorithm: dns.ECDSAP256SHA256}, signed); len(got.Keys) != 2 {
		t.Fatal("keys of the asked algorithm dropped after the turn-off")
	}
	unsigned := &dnsv1.DNSZone{}
	status.Set(&unsigned.Status.Conditions, 1, dnsv1.ConditionSecure, false, dnsv1.ReasonUnsigned, "off")
	if got := freshAlgorithm(ks, ed, unsigned); len(got.Keys) != 0 {
		t.Fatal("a zone reported Unsigned kept keys of another algorithm")
	}
	got := freshAlgorithm(off, ed, signed)
	if len(got.Keys) != 0 || got.Unsigning != nil || got.Zone != "x.test." {
		t.Fatalf("after the turn-off, keys of another algorithm kept: %+v", got)
	}
	step, err := dnssec.Machine{Policy: ed, Make: dnssec.Generate}.Next(got, dnssec.Observation{Now: now})
	if err != nil || !step.Changed || len(step.Keys.Keys) != 2 || step.Keys.Keys[0].DNSKEY.Algorithm != dns.ED25519 {
		t.Fatalf("first keys after the change: %v %+v", err, step.Keys.Keys)
	}

	z := &dnsv1.DNSZone{Spec: dnsv1.DNSZoneSpec{DNSSEC: &dnsv1.DNSSEC{Enabled: true, Algorithm: dnsv1.AlgorithmED25519}}}
	for _, tc := range []struct {
		reason string
		ok     bool
		noted  bool
	}{{dnsv1.ReasonSecure, true, true}, {dnsv1.ReasonDSPending, false, true}, {dnsv1.ReasonSigning, false, false}, {dnsv1.ReasonChainBroken, false, false}} {
		z.Status.Conditions = nil
		status.Set(&z.Status.Conditions, 1, dnsv1.ConditionSecure, tc.ok, tc.reason, "the keys' message")
		(&Reconciler{}).noteAlgorithmChange(z, ks)
		c := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionSecure)
		if !tc.noted {
			if c.Reason != tc.reason {
				t.Fatalf("%s replaced by %s", tc.reason, c.Reason)
			}
			continue
		}
		if c.Reason != dnsv1.ReasonAlgorithmChangeNotSupported || (c.Status == metav1.ConditionTrue) != tc.ok {
			t.Fatalf("%s: Secure=%s %s", tc.reason, c.Status, c.Reason)
		}
		for _, want := range []string{"ED25519", "ECDSAP256SHA256", "enabled to false", "Unsigned", "the keys' message"} {
			if !strings.Contains(c.Message, want) {
				t.Fatalf("message %q does not say %q", c.Message, want)
			}
		}
	}
	z.Spec.DNSSEC.Algorithm = ""
	z.Status.Conditions = nil
	status.Set(&z.Status.Conditions, 1, dnsv1.ConditionSecure, true, dnsv1.ReasonSecure, "m")
	(&Reconciler{}).noteAlgorithmChange(z, ks)
	if c := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionSecure); c.Reason != dnsv1.ReasonSecure {
		t.Fatalf("keys of the default algorithm noted: %s", c.Reason)
	}
}
