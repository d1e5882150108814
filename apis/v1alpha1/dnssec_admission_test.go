package v1alpha1_test

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestAdmission_DNSSECDefaults pins the binding of spec.dnssec (docs/api.md, "DNSSEC"):
// enabled: true alone signs the zone with ECDSAP256SHA256, one CSK generated here, NSEC, signatures valid
// for 14 days and refreshed 7 days before they expire; the key lifetimes are left to their
// documented defaults.
func TestAdmission_DNSSECDefaults(t *testing.T) {
	o := object(t, zoneManifest("dnssec-defaults", "c1.example.com", ", dnssec: {enabled: true}"))
	accepts(t, k8s, o, "a DNSZone with dnssec.enabled alone")
	want := map[string]any{
		"enabled":                  true,
		"algorithm":                "ECDSAP256SHA256",
		"keys":                     map[string]any{"scheme": "CSK", "source": "Generated"},
		"denial":                   map[string]any{"type": "NSEC"},
		"signatureValiditySeconds": int64(1209600),
		"signatureRefreshSeconds":  int64(604800),
	}
	got, _, _ := unstructured.NestedMap(o.Object, "spec", "dnssec")
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("spec.dnssec after admission:\n  %v\nwant\n  %v", got, want)
	}
	off := object(t, zoneManifest("dnssec-absent", "c1.example.com", ""))
	accepts(t, k8s, off, "a DNSZone without spec.dnssec")
	if _, has, _ := unstructured.NestedMap(off.Object, "spec", "dnssec"); has {
		t.Fatal("a DNSZone without spec.dnssec got one by default; DNSSEC is off unless asked for")
	}
}

// TestAdmission_AcceptsDNSSECChoices: every documented choice is accepted.
func TestAdmission_AcceptsDNSSECChoices(t *testing.T) {
	for i, d := range []string{
		`{enabled: true, algorithm: ED25519, keys: {scheme: KSKZSK, kskLifetimeSeconds: 0, zskLifetimeSeconds: 86400}}`,
		`{enabled: true, algorithm: RSASHA256, keys: {scheme: CSK, cskLifetimeSeconds: 3600}}`,
		`{enabled: true, denial: {type: NSEC3}}`,
		`{enabled: true, denial: {type: NSEC3, nsec3: {iterations: 0, salt: "aabbCC01"}}}`,
		`{enabled: true, denial: {type: Compact}}`,
		`{enabled: true, signatureValiditySeconds: 3600, signatureRefreshSeconds: 1800}`,
		`{enabled: false}`,
		`{enabled: true, keys: {scheme: KSKZSK, source: Copied}}`,
		`{enabled: false, keys: {source: Copied}}`,
		`{enabled: true, keys: {source: Generated, cskLifetimeSeconds: 3600}}`,
	} {
		o := object(t, fmt.Sprintf(zoneManifest("dnssec-ok-%d", "c1.example.com", ", dnssec: %s"), i, d))
		if err := k8s.Create(ctx(t), o); err != nil {
			t.Errorf("spec.dnssec %s was refused: %v", d, err)
		}
	}
}

// TestAdmission_RefusesBadDNSSEC pins what admission refuses in spec.dnssec.
func TestAdmission_RefusesBadDNSSEC(t *testing.T) {
	refusesEach(t, zoneManifest("bad-dnssec-%d", "c1.example.com", ", dnssec: %s"), []refusal{
		{"unknown algorithm", `{enabled: true, algorithm: RSASHA1}`, "algorithm: Unsupported value"},
		{"unknown scheme", `{enabled: true, keys: {scheme: ZSKOnly}}`, "scheme: Unsupported value"},
		{"CSK lifetime with KSKZSK", `{enabled: true, keys: {scheme: KSKZSK, cskLifetimeSeconds: 86400}}`, "cskLifetimeSeconds applies only to scheme CSK"},
		{"KSK lifetime with CSK", `{enabled: true, keys: {kskLifetimeSeconds: 86400}}`, "kskLifetimeSeconds and zskLifetimeSeconds apply only to scheme KSKZSK"},
		{"ZSK lifetime with CSK", `{enabled: true, keys: {scheme: CSK, zskLifetimeSeconds: 86400}}`, "kskLifetimeSeconds and zskLifetimeSeconds apply only to scheme KSKZSK"},
		{"a lifetime too short", `{enabled: true, keys: {cskLifetimeSeconds: 60}}`, "a key lifetime is 0 (no rollover by lifetime) or at least 3600 seconds"},
		{"a negative lifetime", `{enabled: true, keys: {scheme: KSKZSK, zskLifetimeSeconds: -1}}`, "zskLifetimeSeconds"},
		{"unknown denial", `{enabled: true, denial: {type: NSEC5}}`, "type: Unsupported value"},
		{"NSEC3 parameters with NSEC", `{enabled: true, denial: {type: NSEC, nsec3: {iterations: 0}}}`, "nsec3 applies only to denial type NSEC3"},
		{"NSEC3 parameters with the default denial", `{enabled: true, denial: {nsec3: {salt: "ab"}}}`, "nsec3 applies only to denial type NSEC3"},
		{"too many iterations", `{enabled: true, denial: {type: NSEC3, nsec3: {iterations: 51}}}`, "iterations"},
		{"negative iterations", `{enabled: true, denial: {type: NSEC3, nsec3: {iterations: -1}}}`, "iterations"},
		{"salt not hex", `{enabled: true, denial: {type: NSEC3, nsec3: {salt: "xyz0"}}}`, "salt"},
		{"salt of an odd length", `{enabled: true, denial: {type: NSEC3, nsec3: {salt: "abc"}}}`, "salt"},
		{"salt over 255 octets", fmt.Sprintf(`{enabled: true, denial: {type: NSEC3, nsec3: {salt: "%0512d"}}}`, 0), "salt"},
		{"refresh equal to validity", `{enabled: true, signatureValiditySeconds: 86400, signatureRefreshSeconds: 86400}`, "signatureRefreshSeconds must be at most half of signatureValiditySeconds"},
		{"refresh above the default validity", `{enabled: true, signatureRefreshSeconds: 2000000}`, "signatureRefreshSeconds must be at most half of signatureValiditySeconds"},
		{"refresh above half the validity", `{enabled: true, signatureValiditySeconds: 3600, signatureRefreshSeconds: 3000}`, "signatureRefreshSeconds must be at most half of signatureValiditySeconds"},
		{"refresh above half the default validity", `{enabled: true, signatureRefreshSeconds: 604801}`, "signatureRefreshSeconds must be at most half of signatureValiditySeconds"},
		{"validity too short", `{enabled: true, signatureValiditySeconds: 60, signatureRefreshSeconds: 30}`, "signatureValiditySeconds"},
		{"no enabled", `{algorithm: ED25519}`, "enabled: Required value"},
		{"unknown key source", `{enabled: true, keys: {source: Imported}}`, "source: Unsupported value"},
		{"a lifetime with copied keys", `{enabled: true, keys: {source: Copied, cskLifetimeSeconds: 3600}}`, "key lifetimes apply only to source Generated"},
		{"a ZSK lifetime with copied keys", `{enabled: true, keys: {scheme: KSKZSK, source: Copied, zskLifetimeSeconds: 0}}`, "key lifetimes apply only to source Generated"},
	})
}

// TestAdmission_DNSSECAlgorithmChangesOnlyWhileOff: spec.dnssec.algorithm of a zone with
// enabled: true is refused (no algorithm rollover: docs/dnssec.md, "Changing the algorithm");
// with enabled: false it may change, in the same update that turns signing on again too.
func TestAdmission_DNSSECAlgorithmChangesOnlyWhileOff(t *testing.T) {
	c := ctx(t)
	z := object(t, `
apiVersion: dnsplane.io/v1alpha1
kind: DNSZone
metadata: {name: dnssec-algorithm}
spec: {zone: c1.example.com, providerRef: {name: creds}, dnssec: {enabled: true}}`)
	if err := k8s.Create(c, z); err != nil {
		t.Fatal(err)
	}
	changed := z.DeepCopy()
	_ = unstructured.SetNestedField(changed.Object, "ED25519", "spec", "dnssec", "algorithm")
	expectInvalid(t, k8s.Update(c, changed), "algorithm may change only while enabled is false")
	both := changed.DeepCopy()
	_ = unstructured.SetNestedField(both.Object, false, "spec", "dnssec", "enabled")
	expectInvalid(t, k8s.Update(c, both), "algorithm may change only while enabled is false")

	off := z.DeepCopy()
	_ = unstructured.SetNestedField(off.Object, false, "spec", "dnssec", "enabled")
	if err := k8s.Update(c, off); err != nil {
		t.Fatalf("turning signing off was refused: %v", err)
	}
	on := off.DeepCopy()
	_ = unstructured.SetNestedField(on.Object, "ED25519", "spec", "dnssec", "algorithm")
	_ = unstructured.SetNestedField(on.Object, true, "spec", "dnssec", "enabled")
	if err := k8s.Update(c, on); err != nil {
		t.Fatalf("changing the algorithm of a zone whose signing is off was refused: %v", err)
	}
	again := on.DeepCopy()
	_ = unstructured.SetNestedField(again.Object, "RSASHA256", "spec", "dnssec", "algorithm")
	expectInvalid(t, k8s.Update(c, again), "algorithm may change only while enabled is false")
	keep := on.DeepCopy()
	_ = unstructured.SetNestedField(keep.Object, int64(3600), "spec", "dnssec", "signatureRefreshSeconds")
	if err := k8s.Update(c, keep); err != nil {
		t.Fatalf("changing another field of a signed zone was refused: %v", err)
	}
}
