package controllers_test

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/dnszone"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/internal/testing/route53fake"
	"github.com/dnsplane/dnsplane/pkg/provider/factory"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
)

// testRolloverKMSARN is the second customer managed KMS key a Route 53 KSK rollover makes its
// new key in.
const testRolloverKMSARN = "arn:aws:kms:us-east-1:123456789012:key/1a2b3c4d-5e6f-7081-92a3-b4c5d6e7f809"

// r53KSK is a Route 53 child DNSZone (KSK/ZSK, the fake) linked to a signed parent DNSZone of
// the embedded server, in its own manager with the rollover TTLs at 2 s.
type r53KSK struct {
	c             *cluster
	fake          *route53fake.Server
	gate          *faultInjector
	parent, child *dnsv1.DNSZone
	pzone, czone  string
}

// startR53KSK starts the cluster and the fake (which reads the parent's DS from the embedded
// server, as Route 53 does before it deactivates a KSK), and waits until the child is Secure.
func startR53KSK(t *testing.T, name string) *r53KSK {
	ttl := 2 * time.Second
	e := &r53KSK{gate: &faultInjector{}, pzone: name + ".ksk.test", czone: "c." + name + ".ksk.test"}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.TCPUDP(t, "127.0.0.1")))
	e.c = startClusterWith(t, name, time.Hour, 5*time.Hour, clusterOptions{DNSAddr: addr,
		NameServerAddr: netip.MustParseAddr("127.0.0.1"), LocalFaultHook: e.gate.hook,
		RolloverTTLs: dnszone.RolloverTTLs{DNSKEY: ttl, MaxZone: ttl, ParentDS: ttl}})
	var cl cloud
	e.fake, cl = startRoute53(t, "")
	e.fake.SetParentDS(func(zone string) ([]string, error) { return parentDS(e.c.dnsAddr, zone) })
	ns := name
	e.c.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dns"}, Type: factory.TypeLocal},
		secretObj(ns, "aws", cl.secretType, with(cl.data, "AWS_DNSSEC_KMS_KEY_ARN", testKMSARN,
			"AWS_DNSSEC_ROLLOVER_KMS_KEY_ARN", testRolloverKMSARN)))
	e.parent = zoneObj(ns, "p", e.pzone, signed(""))
	e.child = zoneObj(ns, "c", e.czone, func(z *dnsv1.DNSZone) {
		signed(dnsv1.KeySchemeKSKZSK)(z)
		usingSecret("aws")(z)
		z.Spec.LinkToParentDomain = true
	})
	e.c.create(e.parent, e.child)
	e.resolveNameServers(t, ns)
	e.c.waitCondition(e.child, dnsv1.ConditionSecure, metav1.ConditionTrue, dnsv1.ReasonSecure, 2*time.Minute)
	e.get(t)
	return e
}

// resolveNameServers gives the child's Route 53 name servers an address in a DNSZone of the
// embedded server, so that its delegation is not lame.
func (e *r53KSK) resolveNameServers(t *testing.T, ns string) {
	eventually(t, 30*time.Second, "the child's name servers", func() error {
		if err := e.c.client.Get(e.c.ctx(), client.ObjectKeyFromObject(e.child), e.child); err != nil {
			return err
		}
		if len(e.child.Status.NameServers) == 0 {
			return fmt.Errorf("no status.nameServers yet")
		}
		return nil
	})
	_, domain, _ := strings.Cut(e.child.Status.NameServers[0], ".")
	var eps []dnsv1.Endpoint
	for _, n := range e.child.Status.NameServers {
		eps = append(eps, dnsv1.Endpoint{DNSName: n, RecordType: "A", Targets: dnsv1.Targets{"127.0.0.1"}})
	}
	e.c.create(zoneObj(ns, "nsz", domain, nil), endpointObj(ns, "ns-addresses", eps...))
}

func (e *r53KSK) get(t *testing.T) {
	t.Helper()
	if err := e.c.client.Get(e.c.ctx(), client.ObjectKeyFromObject(e.child), e.child); err != nil {
		t.Fatal(err)
	}
}

// rolloverObs is what one look at a running rollover saw.
type rolloverObs struct {
	phase  string
	reason string
	ksks   []route53fake.KSK
	parent []string
}

// observe looks once: the child's phase and Secure reason, the fake's KSKs, the DS set every
// parent name server answers; and checks the invariant: the parent's DS set holds the DS of a
// KSK that is ACTIVE at Route 53 (so that the DNSKEY set it signs validates).
func (e *r53KSK) observe(t *testing.T) rolloverObs {
	t.Helper()
	e.get(t)
	var o rolloverObs
	if st := e.child.Status.DNSSEC; st != nil {
		o.phase = st.RolloverPhase
	}
	if c := meta.FindStatusCondition(e.child.Status.Conditions, dnsv1.ConditionSecure); c != nil {
		o.reason = c.Reason
	}
	o.ksks = e.fake.KSKs(e.child.Status.ZoneID)
	ds, err := parentDS(e.c.dnsAddr, e.czone)
	if err != nil {
		t.Fatalf("parent DS query: %v", err)
	}
	o.parent = ds
	for _, k := range o.ksks {
		if k.Status == route53fake.StatusActive && slices.Contains(ds, strings.ToUpper(k.DS)) {
			return o
		}
	}
	t.Fatalf("phase %q: the parent answers DS %v, of no ACTIVE KSK of %+v", o.phase, ds, o.ksks)
	return o
}

// done says whether the rollover is over: one KSK, not the first, ACTIVE, its DS alone at the
// parent, no phase, Secure.
func (o rolloverObs) done() bool {
	return len(o.ksks) == 1 && o.ksks[0].Name != "dnsplane_ksk1" && o.ksks[0].Status == route53fake.StatusActive &&
		slices.Equal(o.parent, []string{strings.ToUpper(o.ksks[0].DS)}) && o.phase == "" && o.reason == dnsv1.ReasonSecure
}

// runRollover observes every 100 ms until the rollover is over (at most timeout), calling at
// for every observation, and returns the phases seen in order and the number of observations.
func (e *r53KSK) runRollover(t *testing.T, timeout time.Duration, at func(rolloverObs)) ([]string, int) {
	t.Helper()
	var phases []string
	n := 0
	for end := time.Now().Add(timeout); ; n++ {
		o := e.observe(t)
		if o.phase != "" && (len(phases) == 0 || phases[len(phases)-1] != o.phase) {
			phases = append(phases, o.phase)
		}
		if at != nil {
			at(o)
		}
		if o.done() {
			return phases, n
		}
		if time.Now().After(end) {
			t.Fatalf("the KSK rollover does not end: phases %v; last %+v; Secure %+v", phases, o,
				meta.FindStatusCondition(e.child.Status.Conditions, dnsv1.ConditionSecure))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestDNSSEC_Route53KSKRolloverToTheEnd: a KSK rollover asked by annotation on a Route 53 zone
// linked to a parent DNSZone runs Create, Activate, Propagate, PublishDS, WithdrawDS,
// Deactivate and Delete to the end: the new KSK alone at Route 53 and its DS alone at the
// parent, Secure, each Route 53 call made once. At every look the parent's DS set holds the DS of an ACTIVE KSK, the Secure
// reason is RolloverInProgress while the rollover runs, and each phase is an Event.
func TestDNSSEC_Route53KSKRolloverToTheEnd(t *testing.T) {
	e := startR53KSK(t, "r53ksk")
	start := time.Now()
	e.c.annotateIn(e.child, dnszone.AnnotationRollover, "KSK")
	phases, n := e.runRollover(t, 3*time.Minute, func(o rolloverObs) {
		if o.phase != "" && o.reason != dnsv1.ReasonRolloverInProgress && o.reason != dnsv1.ReasonDSPending {
			t.Fatalf("phase %s: Secure reason %s, want RolloverInProgress", o.phase, o.reason)
		}
	})
	t.Logf("Route 53 KSK rollover: phases %v in %s, %d looks", phases, time.Since(start).Round(time.Second), n)
	for _, op := range []string{"CreateKeySigningKey", "ActivateKeySigningKey", "DeactivateKeySigningKey", "DeleteKeySigningKey"} {
		want := 1
		if op == "CreateKeySigningKey" {
			want = 2 // the first key's, when signing was turned on
		}
		if got := e.fake.Count(op); got != want {
			t.Fatalf("%s requests = %d, want %d (each step's call made once)", op, got, want)
		}
	}
	for _, p := range []string{"KSK PublishDS", "KSK WithdrawDS"} { // the phases that wait; each call is one look
		if !slices.Contains(phases, p) {
			t.Fatalf("phase %s not seen: %v", p, phases)
		}
	}
	events := strings.Join(zoneEventsIn(t, e.c, e.child), "\n")
	for _, p := range []string{"Create", "Activate", "Propagate", "PublishDS", "WithdrawDS", "Deactivate", "Delete"} {
		if !strings.Contains(events, "phase "+p) {
			t.Fatalf("no Event for phase %s:\n%s", p, events)
		}
	}
	if !strings.Contains(events, "dnsplane_ksk2 done") {
		t.Fatalf("no Event for the rollover's end:\n%s", events)
	}
}

// zoneEventsIn lists the "<reason>: <message>" of the Events of obj in its cluster.
func zoneEventsIn(t *testing.T, c *cluster, obj client.Object) []string {
	t.Helper()
	var events corev1.EventList
	if err := c.client.List(c.ctx(), &events, client.InNamespace(obj.GetNamespace())); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range events.Items {
		if ev.InvolvedObject.Name == obj.GetName() {
			out = append(out, ev.Reason+": "+ev.Message)
		}
	}
	return out
}

// TestDNSSEC_Route53KSKRolloverKeepsItsPhase: Route 53 refusing ActivateKeySigningKey keeps the
// rollover in Activate (ProviderActionNeeded with Route 53's error, the new KSK INACTIVE, the
// old DS alone at the parent); once it takes it, the parent's writes failing keep the rollover
// in PublishDS (the new DS never reaches the parent, so nothing moves on) for many DS TTLs; once
// they go through, the rollover ends.
func TestDNSSEC_Route53KSKRolloverKeepsItsPhase(t *testing.T) {
	e := startR53KSK(t, "r53kskfault")
	oldDS, _ := parentDS(e.c.dnsAddr, e.czone)
	e.fake.RefuseKSK("ActivateKeySigningKey", "InvalidKeySigningKeyStatus", "The key-signing key (KSK) status isn't valid.", 1000)
	_, release := e.gate.holdAt(local.FaultBeforeApplyChanges, local.ZoneID(e.pzone))
	t.Cleanup(release)
	e.c.annotateIn(e.child, dnszone.AnnotationRollover, "KSK")
	cond := e.c.waitCondition(e.child, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonProviderActionNeeded, time.Minute)
	if !strings.Contains(cond.Message, "stays in phase Activate") || !strings.Contains(cond.Message, "InvalidKeySigningKeyStatus") {
		t.Fatalf("ProviderActionNeeded message %q", cond.Message)
	}
	holds := func(phase string, d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
			o := e.observe(t)
			if !slices.Equal(o.parent, oldDS) || (o.phase != "" && o.phase != phase) {
				t.Fatalf("while held in %s: phase %q, parent DS %v (want %v)", phase, o.phase, o.parent, oldDS)
			}
		}
	}
	holds("KSK Activate", 6*time.Second)
	if ks := e.fake.KSKs(e.child.Status.ZoneID); len(ks) != 2 || ks[1].Status != route53fake.StatusInactive {
		t.Fatalf("KSKs while Activate is refused: %+v", ks)
	}
	e.fake.RefuseKSK("ActivateKeySigningKey", "", "", 0)
	eventually(t, time.Minute, "phase PublishDS", func() error {
		if o := e.observe(t); o.phase != "KSK PublishDS" {
			return fmt.Errorf("phase %q", o.phase)
		}
		return nil
	})
	holds("KSK PublishDS", 10*time.Second) // five DS TTLs: the parent never answers the new DS
	release()
	phases, n := e.runRollover(t, 3*time.Minute, nil)
	t.Logf("after the faults: phases %v, %d looks", phases, n)
}

// TestDNSSEC_Route53KSKRolloverResumesAfterRestart: the manager stopped in the middle of a KSK
// rollover (in WithdrawDS), its marker annotation removed while it is down, and a new manager
// started: the rollover resumes from what Route 53 lists and the parent answers, and ends,
// the parent's DS set holding an ACTIVE KSK's DS at every look while a manager runs.
func TestDNSSEC_Route53KSKRolloverResumesAfterRestart(t *testing.T) {
	e := startR53KSK(t, "r53kskrestart")
	e.c.annotateIn(e.child, dnszone.AnnotationRollover, "KSK")
	restarted := false
	phases, n := e.runRollover(t, 3*time.Minute, func(o rolloverObs) {
		if restarted || o.phase != "KSK WithdrawDS" {
			return
		}
		restarted = true
		e.c.stopManager()
		eventually(t, 20*time.Second, "remove the marker", func() error {
			if err := e.c.client.Get(e.c.ctx(), client.ObjectKeyFromObject(e.child), e.child); err != nil {
				return err
			}
			delete(e.child.Annotations, dnszone.AnnotationKSKRollover)
			return e.c.client.Update(e.c.ctx(), e.child)
		})
		time.Sleep(2 * time.Second) // a DS TTL with no manager (and no embedded server: the parent is not asked)
		e.c.startManager()
	})
	if !restarted {
		t.Fatalf("the rollover ended without phase WithdrawDS: %v", phases)
	}
	t.Logf("restarted in WithdrawDS: phases %v, %d looks", phases, n)
}
