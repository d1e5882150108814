package controllers_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
)

// signed makes a DNSZone ask for DNSSEC with the given key scheme ("" = the default).
func signed(scheme dnsv1.DNSSECKeyScheme) func(*dnsv1.DNSZone) {
	return func(z *dnsv1.DNSZone) {
		z.Spec.DNSSEC = &dnsv1.DNSSEC{Enabled: true, Keys: dnsv1.DNSSECKeys{Scheme: scheme}}
	}
}

// keySecret reads the key Secret of DNSZone name in ns and its key set.
func keySecret(t *testing.T, ns, name string) (*corev1.Secret, dnssec.KeySet) {
	t.Helper()
	var sec corev1.Secret
	if err := k8s.Get(ctxT(t), client.ObjectKey{Namespace: ns, Name: name + "-dnssec"}, &sec); err != nil {
		t.Fatalf("key Secret %s-dnssec: %v", name, err)
	}
	ks, err := dnssec.ParseKeySet(sec.Data[dnssec.SecretKey])
	if err != nil {
		t.Fatalf("key Secret %s-dnssec holds no key set: %v", name, err)
	}
	return &sec, ks
}

// privateParts returns the private-key values of every key of a key Secret (the base64 after
// "PrivateKey:" in BIND's private-key format), the text that must never leave the Secret.
func privateParts(t *testing.T, sec *corev1.Secret) []string {
	t.Helper()
	var doc struct {
		Keys []struct{ Private string } `json:"keys"`
	}
	if err := json.Unmarshal(sec.Data[dnssec.SecretKey], &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, k := range doc.Keys {
		for line := range strings.SplitSeq(k.Private, "\n") {
			if v, ok := strings.CutPrefix(line, "PrivateKey: "); ok {
				out = append(out, strings.TrimSpace(v))
			}
		}
	}
	if len(out) != len(doc.Keys) {
		t.Fatalf("found %d private keys in %d keys", len(out), len(doc.Keys))
	}
	return out
}

// zoneEventMessages returns "reason: message" of every Event of DNSZone name in ns.
func zoneEventMessages(t *testing.T, ns, name string) []string {
	t.Helper()
	var events corev1.EventList
	if err := k8s.List(ctxT(t), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "DNSZone" && e.InvolvedObject.Name == name {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return out
}

// TestDNSSEC_LocalZoneGetsKeysAndDS: a DNSZone of the embedded server with dnssec.enabled
// alone gets a key Secret <name>-dnssec (labelled, owned by the DNSZone, Opaque) holding one
// active ECDSAP256SHA256 CSK of the zone; status.dnssec lists the key by tag and the DS set,
// Secure goes Signing then DSPending, each with an Event; the private key is in no status,
// Event or log line.
func TestDNSSEC_LocalZoneGetsKeysAndDS(t *testing.T) {
	logged := logs.start(t)
	ns := namespace(t, "dnssec-csk")
	z := zoneObj(ns, "z", "csk.dnssec.test", signed(""))
	create(t, z)
	waitCondition(t, z, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonDSPending)
	sec, ks := keySecret(t, ns, "z")
	if sec.Type != corev1.SecretTypeOpaque || sec.Labels["dnsplane.io/zone"] != "z" {
		t.Fatalf("key Secret: type %q labels %v; want Opaque and dnsplane.io/zone=z", sec.Type, sec.Labels)
	}
	if o := metav1.GetControllerOf(sec); o == nil || o.Kind != "DNSZone" || o.UID != z.UID {
		t.Fatalf("key Secret's controller: %+v; want the DNSZone %s", o, z.UID)
	}
	if ks.Zone != "csk.dnssec.test." || len(ks.Keys) != 1 || ks.Keys[0].Role != dnssec.RoleCSK || ks.Keys[0].State != dnssec.Active || ks.Keys[0].DNSKEY.Algorithm != 13 {
		t.Fatalf("key set: zone %s, %d keys %+v; want one active ECDSAP256SHA256 CSK", ks.Zone, len(ks.Keys), ks.Keys)
	}
	if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(z), z); err != nil {
		t.Fatal(err)
	}
	st := z.Status.DNSSEC
	if st == nil || len(st.Keys) != 1 {
		t.Fatalf("status.dnssec: %+v; want one key", st)
	}
	k := st.Keys[0]
	if k.Tag != int32(ks.Keys[0].Tag()) || k.Role != "CSK" || k.State != "Active" || k.Algorithm != "ECDSAP256SHA256" || k.Since == nil {
		t.Fatalf("status.dnssec.keys[0] = %+v; want tag %d, CSK, Active, ECDSAP256SHA256, since", k, ks.Keys[0].Tag())
	}
	var wantDS []string
	for _, rr := range ks.DS(3600, dnssec.Published, dnssec.Active) {
		wantDS = append(wantDS, rr.String())
	}
	if !slices.Equal(st.DS, wantDS) {
		t.Fatalf("status.dnssec.ds = %q; want %q", st.DS, wantDS)
	}
	if want := ks.Keys[0].Since.Add(365 * 24 * time.Hour); st.NextRollover == nil || !st.NextRollover.Time.Equal(want.Truncate(time.Second)) {
		t.Fatalf("status.dnssec.nextRollover = %v; want %v (the CSK's default lifetime)", st.NextRollover, want)
	}
	eventually(t, 10*time.Second, "Events Signing and DSPending", func() error {
		ev := strings.Join(zoneEventMessages(t, ns, "z"), "\n")
		if !strings.Contains(ev, dnsv1.ReasonSigning+": ") || !strings.Contains(ev, dnsv1.ReasonDSPending+": ") {
			return fmt.Errorf("events:\n%s", ev)
		}
		return nil
	})
	noKeyMaterial(t, ns, z, sec, logged())
}

// noKeyMaterial fails when a private key of sec is in z's status, its Events or the logs.
func noKeyMaterial(t *testing.T, ns string, z *dnsv1.DNSZone, sec *corev1.Secret, logged string) {
	t.Helper()
	if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(z), z); err != nil {
		t.Fatal(err)
	}
	st, err := json.Marshal(z.Status)
	if err != nil {
		t.Fatal(err)
	}
	events := strings.Join(zoneEventMessages(t, ns, z.Name), "\n")
	for _, p := range privateParts(t, sec) {
		for where, text := range map[string]string{"status": string(st), "Events": events, "logs": logged} {
			if strings.Contains(text, p) {
				t.Errorf("a private key is in the DNSZone's %s", where)
			}
		}
	}
}

// TestDNSSEC_KSKZSKScheme: scheme KSKZSK makes an active KSK and an active ZSK; the DS set
// holds the KSK's DS alone, and the next rollover is the ZSK's (30 days).
func TestDNSSEC_KSKZSKScheme(t *testing.T) {
	ns := namespace(t, "dnssec-kskzsk")
	z := zoneObj(ns, "z", "kskzsk.dnssec.test", func(z *dnsv1.DNSZone) {
		signed(dnsv1.KeySchemeKSKZSK)(z)
		z.Spec.DNSSEC.Algorithm = dnsv1.AlgorithmED25519
	})
	create(t, z)
	waitCondition(t, z, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonDSPending)
	_, ks := keySecret(t, ns, "z")
	var roles []string
	for _, k := range ks.Keys {
		if k.State != dnssec.Active || k.DNSKEY.Algorithm != 15 {
			t.Fatalf("key %d: %s %s algorithm %d; want Active ED25519", k.Tag(), k.Role, k.State, k.DNSKEY.Algorithm)
		}
		roles = append(roles, string(k.Role))
	}
	slices.Sort(roles)
	if !slices.Equal(roles, []string{"KSK", "ZSK"}) {
		t.Fatalf("roles %v; want KSK and ZSK", roles)
	}
	if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(z), z); err != nil {
		t.Fatal(err)
	}
	if st := z.Status.DNSSEC; len(st.Keys) != 2 || len(st.DS) != 1 || st.NextRollover == nil ||
		st.NextRollover.Time.Sub(time.Now()) > 31*24*time.Hour {
		t.Fatalf("status.dnssec = %+v; want two keys, one DS, the next rollover within 30 days", st)
	}
}

// TestDNSSEC_ExistingSecretIsNeverOverwritten: a key Secret that exists is never written. One
// holding another zone's keys, or text that is no key set, gives Secure=False KeysInvalid and
// stays as it was; one holding this zone's keys (imported by hand) is used as it is.
func TestDNSSEC_ExistingSecretIsNeverOverwritten(t *testing.T) {
	ns := namespace(t, "dnssec-existing")
	other, err := dnssec.Generate("other.dnssec.test", 13, dnssec.RoleCSK, dnssec.Active, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	otherRaw, err := dnssec.KeySet{Zone: "other.dnssec.test.", Keys: []dnssec.Key{other}}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	mine, err := dnssec.Generate("imported.dnssec.test", 13, dnssec.RoleCSK, dnssec.Active, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	mineRaw, err := dnssec.KeySet{Zone: "imported.dnssec.test.", Keys: []dnssec.Key{mine}}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, zone, data, reason string }{
		{"foreign", "foreign.dnssec.test", string(otherRaw), dnsv1.ReasonKeysInvalid},
		// Longer than a hex dump's line: client-go dumps a protobuf response body 16 bytes a
		// line at its debug verbosity, which the suite's secret scan reads.
		{"garbage", "garbage.dnssec.test", "this text is no key set of any zone at all", dnsv1.ReasonKeysInvalid},
		{"imported", "imported.dnssec.test", string(mineRaw), dnsv1.ReasonDSPending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tc.name + "-dnssec"},
				StringData: map[string]string{dnssec.SecretKey: tc.data}}
			create(t, sec)
			z := zoneObj(ns, tc.name, tc.zone, signed(""))
			create(t, z)
			c := waitCondition(t, z, dnsv1.ConditionSecure, metav1.ConditionFalse, tc.reason)
			var after corev1.Secret
			if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(sec), &after); err != nil {
				t.Fatal(err)
			}
			if after.ResourceVersion != sec.ResourceVersion || string(after.Data[dnssec.SecretKey]) != tc.data {
				t.Fatalf("the key Secret was written (resourceVersion %s -> %s)", sec.ResourceVersion, after.ResourceVersion)
			}
			if tc.reason == dnsv1.ReasonKeysInvalid && !strings.Contains(c.Message, tc.name+"-dnssec") {
				t.Fatalf("KeysInvalid message %q does not name the Secret", c.Message)
			}
			if tc.name == "imported" {
				if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(z), z); err != nil {
					t.Fatal(err)
				}
				if k := z.Status.DNSSEC.Keys; len(k) != 1 || k[0].Tag != int32(mine.Tag()) {
					t.Fatalf("status.dnssec.keys = %+v; want the imported key %d", k, mine.Tag())
				}
			}
		})
	}
}

// TestDNSSEC_OffAndNotSupported: without spec.dnssec there is no Secure condition and no key
// Secret; enabled: false gives Secure=False Unsigned; a provider that does not sign (Route 53's
// fake) gives Secure=False NotSupported and no key Secret.
func TestDNSSEC_OffAndNotSupported(t *testing.T) {
	ns := namespace(t, "dnssec-off")
	plain := zoneObj(ns, "plain", "plain.dnssec.test", nil)
	off := zoneObj(ns, "off", "off.dnssec.test", func(z *dnsv1.DNSZone) { z.Spec.DNSSEC = &dnsv1.DNSSEC{} })
	create(t, plain, off)
	waitCondition(t, off, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonUnsigned)
	waitCondition(t, plain, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	if c, _ := condition(t, plain, dnsv1.ConditionSecure); c != nil {
		t.Fatalf("a zone without spec.dnssec has Secure %+v; want none", c)
	}
	_, r53 := startRoute53(t, "")
	create(t, secretObj(ns, "aws", r53.secretType, r53.data))
	cloud := zoneObj(ns, "cloud", "cloud.dnssec.test", func(z *dnsv1.DNSZone) {
		signed("")(z)
		usingSecret("aws")(z)
	})
	create(t, cloud)
	c := waitCondition(t, cloud, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonNotSupported)
	if !strings.Contains(c.Message, "aws") {
		t.Fatalf("NotSupported message %q does not name the provider Secret", c.Message)
	}
	for _, name := range []string{"plain", "off", "cloud"} {
		var sec corev1.Secret
		if err := k8s.Get(ctxT(t), client.ObjectKey{Namespace: ns, Name: name + "-dnssec"}, &sec); err == nil {
			t.Errorf("DNSZone %s got a key Secret", name)
		}
	}
}

// TestDNSSEC_RolloverByAnnotation: the annotation dnsplane.io/rollover starts a rollover of the
// key in that role through the rollover machine: the key Secret gets the new key (a ZSK
// Published beside the active one; a CSK Published with its DS beside the old one's) and the
// rollover's phase, status.dnssec says the phase and lists the new key, an Event tells the
// phase change, and the annotation is removed so that it starts nothing more. With no server
// observed answering the new key set (and no parent answering the new DS), the phase stays
// Publish.
func TestDNSSEC_RolloverByAnnotation(t *testing.T) {
	ns := namespace(t, "dnssec-roll")
	for _, tc := range []struct {
		name   string
		scheme dnsv1.DNSSECKeyScheme
		role   string
		keys   int
		ds     int
	}{
		{"zsk", dnsv1.KeySchemeKSKZSK, "ZSK", 3, 1},
		{"csk", dnsv1.KeySchemeCSK, "CSK", 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := zoneObj(ns, tc.name, tc.name+".roll.dnssec.test", signed(tc.scheme))
			create(t, z)
			waitCondition(t, z, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonDSPending)
			_, before := keySecret(t, ns, tc.name)
			annotate(t, z, "dnsplane.io/rollover", tc.role)
			eventually(t, 20*time.Second, "the rollover's Publish phase", func() error {
				return rolloverPublished(t, z, tc.role, tc.keys, tc.ds)
			})
			_, ks := keySecret(t, ns, tc.name)
			if ks.Rollover == nil || ks.Rollover.Phase != dnssec.PhasePublish || string(ks.Rollover.Role) != tc.role ||
				ks.Rollover.Old != before.Keys[len(before.Keys)-1].Tag() && ks.Rollover.Old != before.Keys[0].Tag() {
				t.Fatalf("persisted rollover %+v; want %s Publish replacing an old key", ks.Rollover, tc.role)
			}
			eventually(t, 10*time.Second, "the rollover Event", func() error {
				ev := strings.Join(zoneEventMessages(t, ns, tc.name), "\n")
				if !strings.Contains(ev, dnsv1.ReasonRolloverInProgress+": "+tc.role+" rollover: publishing key") {
					return fmt.Errorf("events:\n%s", ev)
				}
				return nil
			})
			time.Sleep(3 * time.Second) // reconciles that observe nothing move no phase
			if _, again := keySecret(t, ns, tc.name); again.Rollover == nil || again.Rollover.Phase != dnssec.PhasePublish ||
				len(again.Keys) != tc.keys {
				t.Fatalf("rollover %+v with %d keys; want it still in Publish with %d keys", again.Rollover, len(again.Keys), tc.keys)
			}
		})
	}
}

// annotate sets annotation k=v on obj.
func annotate(t *testing.T, obj client.Object, k, v string) {
	t.Helper()
	annotateWith(t, k8s, obj, k, v)
}

// annotateWith sets annotation k=v on obj through cl, reading obj back first.
func annotateWith(t *testing.T, cl client.Client, obj client.Object, k, v string) {
	t.Helper()
	eventually(t, 20*time.Second, "annotate "+obj.GetName(), func() error {
		if err := cl.Get(ctxT(t), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		a := obj.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[k] = v
		obj.SetAnnotations(a)
		return cl.Update(ctxT(t), obj)
	})
}

// rolloverPublished checks that z's status shows a rollover of role in Publish with keys keys
// and ds DS records, and that the rollover annotation is gone.
func rolloverPublished(t *testing.T, z *dnsv1.DNSZone, role string, keys, ds int) error {
	t.Helper()
	if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(z), z); err != nil {
		return err
	}
	if _, ok := z.Annotations["dnsplane.io/rollover"]; ok {
		return fmt.Errorf("the annotation is still there")
	}
	st := z.Status.DNSSEC
	if st == nil || st.RolloverPhase != role+" Publish" || len(st.Keys) != keys || len(st.DS) != ds {
		return fmt.Errorf("status.dnssec = %+v; want %s Publish with %d keys and %d DS", st, role, keys, ds)
	}
	return nil
}
