package dnszone

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
)

// TestKeysDiffer: keys that do not follow spec.dnssec's algorithm or scheme (imported keys,
// or a spec changed after the keys were made) are named in the Secure message; keys that
// follow it are not.
func TestKeysDiffer(t *testing.T) {
	now := time.Now()
	gen := func(role dnssec.Role, alg uint8) dnssec.Key {
		k, err := dnssec.Generate("x.test", alg, role, dnssec.Active, now)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	csk13 := dnssec.KeySet{Zone: "x.test.", Keys: []dnssec.Key{gen(dnssec.RoleCSK, 13)}}
	kz15 := dnssec.KeySet{Zone: "x.test.", Keys: []dnssec.Key{gen(dnssec.RoleKSK, 15), gen(dnssec.RoleZSK, 15)}}
	spec := func(alg dnsv1.DNSSECAlgorithm, scheme dnsv1.DNSSECKeyScheme) *dnsv1.DNSSEC {
		return &dnsv1.DNSSEC{Enabled: true, Algorithm: alg, Keys: dnsv1.DNSSECKeys{Scheme: scheme}}
	}
	for _, tc := range []struct {
		name string
		ks   dnssec.KeySet
		d    *dnsv1.DNSSEC
		want []string
	}{
		{"CSK as asked", csk13, spec("ECDSAP256SHA256", "CSK"), nil},
		{"defaults", csk13, spec("", ""), nil},
		{"KSKZSK as asked", kz15, spec("ED25519", "KSKZSK"), nil},
		{"another algorithm", csk13, spec("ED25519", "CSK"), []string{"ECDSAP256SHA256", "ED25519"}},
		{"another scheme", kz15, spec("ED25519", "CSK"), []string{"KSKZSK", "CSK"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := keysDiffer(tc.ks, tc.d)
			if (got == "") != (tc.want == nil) {
				t.Fatalf("keysDiffer = %q; want a difference: %v", got, tc.want != nil)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Fatalf("keysDiffer = %q; want it to name %s", got, w)
				}
			}
		})
	}
}

// TestSetKeysSecure_SigningUntilServed: a signed, available zone stays Signing while a name
// server does not answer its DNSKEY set signed, and is DSPending once every one does.
func TestSetKeysSecure_SigningUntilServed(t *testing.T) {
	k, err := dnssec.Generate("x.test", 13, dnssec.RoleCSK, dnssec.Active, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	step := dnssec.Step{Keys: dnssec.KeySet{Zone: "x.test.", Keys: []dnssec.Key{k}}}
	for _, tc := range []struct {
		name   string
		served error
		want   string
	}{
		{"not served", errors.New("name server 127.0.0.1:53: DNSKEY tags [], want [1]"), dnsv1.ReasonSigning},
		{"served", nil, dnsv1.ReasonDSPending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := &dnsv1.DNSZone{Spec: dnsv1.DNSZoneSpec{Zone: "x.test", DNSSEC: &dnsv1.DNSSEC{Enabled: true}}}
			z.Status.Conditions = []metav1.Condition{{Type: dnsv1.ConditionZoneAvailable, Status: metav1.ConditionTrue}}
			(&Reconciler{}).setKeysSecure(z, step, false, keysSeen{notServed: tc.served})
			c := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionSecure)
			if c == nil || c.Reason != tc.want {
				t.Fatalf("Secure = %+v; want reason %s", c, tc.want)
			}
			if tc.served != nil && !strings.Contains(c.Message, "127.0.0.1:53") {
				t.Fatalf("Secure message %q names no server", c.Message)
			}
		})
	}
}

// TestSetKeysSecure_Reasons: served keys give DSPending with the DS set for the registrar when
// the parent is not a linked DNSZone, ChainBroken when the parent's DS matches no key,
// RolloverInProgress during a rollover on a verified chain, DSPending while the parent does not
// answer the DS set, and Secure when it does and the chain verifies.
func TestSetKeysSecure_Reasons(t *testing.T) {
	k, err := dnssec.Generate("x.test", 13, dnssec.RoleCSK, dnssec.Active, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ks := dnssec.KeySet{Zone: "x.test.", Keys: []dnssec.Key{k}}
	step := dnssec.Step{Keys: ks, DS: ks.DS(3600, dnssec.Active)}
	rolling := step
	rolling.Keys.Rollover = &dnssec.Rollover{Role: dnssec.RoleCSK, Phase: dnssec.PhasePublish}
	broken := fmt.Errorf("%w: the DS set matches no key", errChainBroken)
	for _, tc := range []struct {
		name string
		step dnssec.Step
		seen keysSeen
		want string
		says string
	}{
		{"parent outside", step, keysSeen{}, dnsv1.ReasonDSPending, "registrar"},
		{"chain broken", step, keysSeen{linked: true, notAtParent: errors.New("DS [1]"), chain: broken}, dnsv1.ReasonChainBroken, "matches no key"},
		{"rollover on a verified chain", rolling, keysSeen{linked: true, notAtParent: errors.New("DS [1]")}, dnsv1.ReasonRolloverInProgress, "Publish"},
		{"DS not at the parent", step, keysSeen{linked: true, notAtParent: errors.New("DS []"), chain: errors.New("no DS")}, dnsv1.ReasonDSPending, "parent name server"},
		{"secure", step, keysSeen{linked: true}, dnsv1.ReasonSecure, "verifies"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := &dnsv1.DNSZone{Spec: dnsv1.DNSZoneSpec{Zone: "x.test", DNSSEC: &dnsv1.DNSSEC{Enabled: true}}}
			z.Status.Conditions = []metav1.Condition{{Type: dnsv1.ConditionZoneAvailable, Status: metav1.ConditionTrue}}
			(&Reconciler{}).setKeysSecure(z, tc.step, false, tc.seen)
			c := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionSecure)
			if c == nil || c.Reason != tc.want || !strings.Contains(c.Message, tc.says) {
				t.Fatalf("Secure = %+v; want reason %s saying %q", c, tc.want, tc.says)
			}
		})
	}
}
