package controllers_test

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/dnszone"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/pkg/provider/factory"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
)

// The child-last turn-off under faults (docs/dnssec.md, "Turning it off"): a key Secret deleted,
// a status lost, a DS write in flight, an unlink, a signed zone deleted with preserveOnDelete.

// attackPair is a signed parent DNSZone p and a signed child c linked to it, both on the
// embedded server, with the child Secure; rollover TTLs of 3 s.
type attackPair struct {
	c            *cluster
	gate         *faultInjector
	ns           string
	pzone, czone string
	parent       *dnsv1.DNSZone
	child        *dnsv1.DNSZone
}

func newAttackPair(t *testing.T, ns string, muts ...func(*dnsv1.DNSZone)) *attackPair {
	t.Helper()
	ttl := 3 * time.Second
	gate := &faultInjector{}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.TCPUDP(t, "127.0.0.1")))
	c := startClusterWith(t, ns, time.Hour, 5*time.Hour, clusterOptions{DNSAddr: addr,
		NameServerAddr: netip.MustParseAddr("127.0.0.1"), LocalFaultHook: gate.hook,
		RolloverTTLs: dnszone.RolloverTTLs{DNSKEY: ttl, MaxZone: ttl, ParentDS: ttl}})
	c.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dns"}, Type: factory.TypeLocal})
	pzone, czone := "atk.dnssec.test", "c.atk.dnssec.test"
	parent := zoneObj(ns, "p", pzone, signed(""))
	child := zoneObj(ns, "c", czone, func(z *dnsv1.DNSZone) {
		signed("")(z)
		z.Spec.LinkToParentDomain = true
		for _, m := range muts {
			m(z)
		}
	})
	c.create(parent, child)
	c.waitCondition(child, dnsv1.ConditionSecure, metav1.ConditionTrue, dnsv1.ReasonSecure, time.Minute)
	return &attackPair{c: c, gate: gate, ns: ns, pzone: pzone, czone: czone, parent: parent, child: child}
}

// setEnabled sets the child's spec.dnssec.enabled.
func (a *attackPair) setEnabled(t *testing.T, on bool) {
	t.Helper()
	eventually(t, 20*time.Second, fmt.Sprintf("set dnssec.enabled=%v", on), func() error {
		if err := a.c.client.Get(a.c.ctx(), client.ObjectKeyFromObject(a.child), a.child); err != nil {
			return err
		}
		a.child.Spec.DNSSEC.Enabled = on
		return a.c.client.Update(a.c.ctx(), a.child)
	})
}

// parentDS is the DS set the parent's server answers for the child (a DS query over TCP).
func parentDS(addr, zone string) ([]string, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(zone), dns.TypeDS)
	m.SetEdns0(4096, true)
	r, _, err := (&dns.Client{Net: "tcp", Timeout: 3 * time.Second}).Exchange(m, addr)
	if err != nil {
		return nil, err
	}
	return dsIn(r.Answer, zone), nil
}

// childLastHolds watches the server for d: at no moment may the parent answer a DS for the
// child while the child answers its SOA unsigned (docs/dnssec.md "Turning it off": "no validator
// holds a DS of a zone it is answered unsigned from").
func (a *attackPair) childLastHolds(t *testing.T, d time.Duration) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		ds, err := parentDS(a.c.dnsAddr, a.czone)
		if err != nil {
			t.Fatalf("parent DS query: %v", err)
		}
		s, err := signedAt(a.c.dnsAddr, a.czone)
		if err != nil {
			t.Fatalf("child SOA query: %v", err)
		}
		if len(ds) > 0 && !s {
			t.Fatalf("CHILD-LAST BROKEN: the parent answers DS %v for %s while the child answers its SOA unsigned", ds, a.czone)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAttack_KeySecretDeletedMidTurnOff: a turn-off waits for the parent (its writes held, so
// it keeps answering the DS); the key Secret is deleted meanwhile. docs/dnssec.md: the zone
// "stays signed until every parent name server answers no DS" and a key Secret "that is
// missing ... changes nothing: the zone keeps the keys it is signed with".
func TestAttack_KeySecretDeletedMidTurnOff(t *testing.T) {
	a := newAttackPair(t, "atk-secret")
	_, release := a.gate.holdAt(local.FaultBeforeApplyChanges, local.ZoneID(a.pzone))
	t.Cleanup(release)
	a.setEnabled(t, false)
	a.c.waitCondition(a.child, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonUnsigning, 30*time.Second)
	a.childLastHolds(t, 3*time.Second)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: a.ns, Name: "c-dnssec"}}
	if err := a.c.client.Delete(a.c.ctx(), sec); err != nil {
		t.Fatal(err)
	}
	a.childLastHolds(t, 20*time.Second)
}

// TestAttack_StatusLostMidTurnOff: a turn-off waits for the parent (its writes held); the
// manager stops, the DNSZone's status is lost (a backup restored without status, a status
// rewritten by hand) and the manager starts again. docs/dnssec.md "The signer's rule": "a
// status that is lost or rebuilt never stops the signing early (no record means signed)".
func TestAttack_StatusLostMidTurnOff(t *testing.T) {
	a := newAttackPair(t, "atk-status")
	_, release := a.gate.holdAt(local.FaultBeforeApplyChanges, local.ZoneID(a.pzone))
	t.Cleanup(release)
	a.setEnabled(t, false)
	a.c.waitCondition(a.child, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonUnsigning, 30*time.Second)
	a.c.stopManager()
	eventually(t, 20*time.Second, "wipe the child's status", func() error {
		if err := a.c.client.Get(a.c.ctx(), client.ObjectKeyFromObject(a.child), a.child); err != nil {
			return err
		}
		a.child.Status = dnsv1.DNSZoneStatus{}
		return a.c.client.Status().Update(a.c.ctx(), a.child)
	})
	a.c.startManager()
	// The restarted replica's signer reads the key Secret (every Pending, 10 s, until it signs):
	// the zone must be signed again while the parent answers its DS.
	eventually(t, 45*time.Second, "the restarted replica signs the child while the parent answers its DS (CHILD-LAST BROKEN otherwise)", func() error {
		ds, err := parentDS(a.c.dnsAddr, a.czone)
		if err != nil || len(ds) == 0 {
			return fmt.Errorf("parent DS %v, %v", ds, err)
		}
		if s, err := signedAt(a.c.dnsAddr, a.czone); err != nil || !s {
			return fmt.Errorf("the parent answers DS %v; the child SOA signed %v, %v", ds, s, err)
		}
		return nil
	})
	a.childLastHolds(t, 15*time.Second)
}

// TestAttack_DSWriteInFlightCountsAsGone: after a full turn-off, DNSSEC is turned on again
// while the parent's provider is slow (its write of the DS held), then off again before that
// write lands. The parent answers no DS only because the DS is not written yet: the zone must
// stay signed until the link's write without the DS has landed (after the held one), the parent
// answers no DS and the TTLs have passed. docs/dnssec.md "Turning it off".
func TestAttack_DSWriteInFlightCountsAsGone(t *testing.T) {
	a := newAttackPair(t, "atk-inflight")
	a.setEnabled(t, false)
	a.c.waitCondition(a.child, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonUnsigned, time.Minute)
	eventually(t, 30*time.Second, "the child served unsigned", func() error {
		if s, err := signedAt(a.c.dnsAddr, a.czone); err != nil || s {
			return fmt.Errorf("signed %v, %v", s, err)
		}
		return nil
	})
	held, release := a.gate.holdAt(local.FaultBeforeApplyChanges, local.ZoneID(a.pzone))
	t.Cleanup(release)
	a.setEnabled(t, true)
	select {
	case <-held:
	case <-time.After(time.Minute):
		t.Fatal("the DS write never reached the parent's provider")
	}
	a.setEnabled(t, false)
	a.c.waitCondition(a.child, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonUnsigning, 30*time.Second)
	// The held write may land at any moment: the zone stays signed, well past the DS and
	// DNSKEY TTLs (6 s), however the parent answers meanwhile.
	a.staysSigned(t, 12*time.Second)
	release()
	a.childLastHolds(t, 5*time.Second)
	a.c.waitCondition(a.child, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonUnsigned, time.Minute)
	a.childLastHolds(t, 10*time.Second)
}

// staysSigned fails unless the child answers its SOA signed at every look for d.
func (a *attackPair) staysSigned(t *testing.T, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if s, err := signedAt(a.c.dnsAddr, a.czone); err != nil || !s {
			t.Fatalf("CHILD-LAST BROKEN: the child answers its SOA unsigned (%v) while a DS write to the parent is in flight", err)
		}
	}
}

// TestAttack_UnlinkMidTurnOff: a turn-off waits for the parent (its writes held, so it keeps
// answering the DS); the child's linkToParentDomain is then set to false. The parent DNSZone
// still serves the DS (its write removing the link is held too), yet the child now counts as "a
// zone not linked to a parent DNSZone", takes step 2 at once and unsigns after the TTLs.
// docs/dnssec.md "Turning it off": "the DS set leaves the parent before the signatures leave
// the zone".
func TestAttack_UnlinkMidTurnOff(t *testing.T) {
	a := newAttackPair(t, "atk-unlink")
	_, release := a.gate.holdAt(local.FaultBeforeApplyChanges, local.ZoneID(a.pzone))
	t.Cleanup(release)
	a.setEnabled(t, false)
	a.c.waitCondition(a.child, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonUnsigning, 30*time.Second)
	eventually(t, 20*time.Second, "unlink the child", func() error {
		if err := a.c.client.Get(a.c.ctx(), client.ObjectKeyFromObject(a.child), a.child); err != nil {
			return err
		}
		a.child.Spec.LinkToParentDomain = false
		return a.c.client.Update(a.c.ctx(), a.child)
	})
	a.childLastHolds(t, 20*time.Second)
}

// TestAttack_PreservedSignedZoneDeleted: a signed child DNSZone with preserveOnDelete (docs/api.md:
// "nothing at the provider is deleted: the link stays") is deleted. Its zone and its parent link,
// with the DS, stay; docs/dnssec.md: "Deleting the DNSZone serves the zone unsigned in every
// replica". The parent then holds a DS of a zone answered unsigned: bogus, for good.
func TestAttack_PreservedSignedZoneDeleted(t *testing.T) {
	a := newAttackPair(t, "atk-preserve", func(z *dnsv1.DNSZone) { z.Spec.PreserveOnDelete = true })
	if err := a.c.client.Delete(a.c.ctx(), a.child); err != nil {
		t.Fatal(err)
	}
	a.childLastHolds(t, 20*time.Second)
	eventually(t, time.Minute, "the DNSZone gone once unsigned child last, its kept link without the DS", func() error {
		if err := a.c.client.Get(a.c.ctx(), client.ObjectKeyFromObject(a.child), &dnsv1.DNSZone{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("DNSZone still there: %v", err)
		}
		var link dnsv1.DNSEndpoint
		if err := a.c.client.Get(a.c.ctx(), client.ObjectKey{Namespace: a.ns, Name: "c-parent-link"}, &link); err != nil {
			return fmt.Errorf("the kept link: %w", err)
		}
		if ds, err := parentDS(a.c.dnsAddr, a.czone); err != nil || len(ds) > 0 {
			return fmt.Errorf("parent DS %v, %v", ds, err)
		}
		return nil
	})
	a.childLastHolds(t, 3*time.Second)
}
