package controllers_test

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
)

// signedAt says whether server addr answers zone's SOA, asked with DO, with an RRSIG.
func signedAt(addr, zone string) (bool, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(zone), dns.TypeSOA)
	m.SetEdns0(4096, true)
	r, _, err := (&dns.Client{Net: "tcp", Timeout: 3 * time.Second}).Exchange(m, addr)
	if err != nil {
		return false, err
	}
	if len(r.Answer) == 0 {
		return false, fmt.Errorf("no SOA:\n%v", r)
	}
	return hasRRSIG(r), nil
}

// validOrInsecure accepts a delv answer that is fully validated or proven unsigned (an
// insecure delegation): anything else is bogus.
func validOrInsecure(out string) bool {
	return strings.Contains(out, "fully validated") || strings.Contains(out, "unsigned answer")
}

// TestDNSSEC_TurnOffChildLast: turning DNSSEC off for a child DNSZone linked to a signed parent
// withdraws the DS from the parent first and unsigns the zone only once every parent server
// answers no DS and the DS TTL has passed. With the parent's writes held, the child stays signed
// (Secure=False, reason Unsigning), also across a manager restart; once they go through, the
// parent drops the DS and the zone is served unsigned after the DS and DNSKEY TTLs (Unsigned,
// each step an Event). A delv loop anchored at the parent's DS gets no bogus answer from the flip to the end.
func TestDNSSEC_TurnOffChildLast(t *testing.T) {
	ttl := 3 * time.Second
	var gate faultInjector
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.TCPUDP(t, "127.0.0.1")))
	const ns, pzone, czone = "unsign", "off.dnssec.test", "c.off.dnssec.test"
	c, parent, child := linkedPair{owner: "dnssec-off", ns: ns, pzone: pzone, czone: czone, ttl: ttl,
		opts: clusterOptions{DNSAddr: addr, LocalFaultHook: gate.hook}}.start(t)
	w := delvWatch{addr: c.dnsAddr, anchor: pzone + ".", zone: czone + ".", ds: parent.Status.DNSSEC.DS}
	const bad = "neither fully validated nor unsigned"
	d := startDelv(t, w, validOrInsecure, bad)

	// The parent's writes are held: the DS stays in the parent zone.
	_, release := gate.holdAt(local.FaultBeforeApplyChanges, local.ZoneID(pzone))
	t.Cleanup(release)
	eventually(t, 20*time.Second, "turn DNSSEC off", func() error {
		if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(child), child); err != nil {
			return err
		}
		child.Spec.DNSSEC.Enabled = false
		return c.client.Update(c.ctx(), child)
	})
	c.waitCondition(child, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonUnsigning, 30*time.Second)
	time.Sleep(3 * ttl)
	d.end(t, "while the parent holds the DS")
	stillSigned(t, c, ns, czone, pzone)

	// A restarted manager keeps the zone signed: the turn-off is in the key Secret.
	c.stopManager()
	c.startManager()
	time.Sleep(3 * ttl)
	stillSigned(t, c, ns, czone, pzone)
	d = startDelv(t, w, validOrInsecure, bad)

	release()
	c.waitCondition(child, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonUnsigned, time.Minute)
	eventually(t, 30*time.Second, "the zone served unsigned", func() error {
		if s, err := signedAt(c.dnsAddr, czone); err != nil || s {
			return fmt.Errorf("signed %v, %v", s, err)
		}
		return nil
	})
	u := unsigningOf(t, c, ns)
	if !u.Done || u.ParentGoneAt.IsZero() {
		t.Fatalf("key set unsigning %+v; want done, with the time the parent dropped the DS", u)
	}
	time.Sleep(time.Second)
	total := d.end(t, "from the restart to the end")
	t.Logf("turn-off, from the restart to the end: delv answers %d, none bogus", total)
	unsigningEvents(t, c, ns, "c")
}

// stillSigned checks that the child zone is still answered signed, with the CDS delete form
// (RFC 8078), its turn-off waits for the parent (Unsigning, no parent observation yet) and the
// parent still answers its DS.
func stillSigned(t *testing.T, c *cluster, ns, czone, pzone string) {
	t.Helper()
	eventually(t, 30*time.Second, "the zone still signed while the parent holds its DS", func() error {
		if s, err := signedAt(c.dnsAddr, czone); err != nil || !s {
			return fmt.Errorf("signed %v, %v", s, err)
		}
		return nil
	})
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(czone), dns.TypeCDS)
	m.SetEdns0(4096, true)
	r, _, err := (&dns.Client{Net: "tcp", Timeout: 3 * time.Second}).Exchange(m, c.dnsAddr)
	if err != nil || len(r.Answer) != 2 || !hasRRSIG(r) || !strings.HasSuffix(r.Answer[0].String(), "CDS\t0 0 0 00") {
		t.Fatalf("CDS of %s while unsigning: %v %v; want the delete form 0 0 0 00, signed", czone, r, err)
	}
	if got := dsIn(transfer(t, c.dnsAddr, pzone), czone); len(got) == 0 {
		t.Fatalf("the parent dropped the DS while its writes were held")
	}
	if u := unsigningOf(t, c, ns); u.Done || !u.ParentGoneAt.IsZero() {
		t.Fatalf("key set unsigning %+v while the parent answers the DS; want neither done nor a parent drop", u)
	}
	z := &dnsv1.DNSZone{}
	if err := c.client.Get(c.ctx(), client.ObjectKey{Namespace: ns, Name: "c"}, z); err != nil {
		t.Fatal(err)
	}
	if s := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionSecure); s == nil || s.Reason != dnsv1.ReasonUnsigning {
		t.Fatalf("Secure %+v; want Unsigning", s)
	}
}

// unsigningOf is the turn-off recorded in the key set of DNSZone c in ns.
func unsigningOf(t *testing.T, c *cluster, ns string) dnssec.Unsigning {
	t.Helper()
	var sec corev1.Secret
	if err := c.client.Get(c.ctx(), client.ObjectKey{Namespace: ns, Name: "c-dnssec"}, &sec); err != nil {
		t.Fatal(err)
	}
	ks, err := dnssec.ParseKeySet(sec.Data[dnssec.SecretKey])
	if err != nil {
		t.Fatal(err)
	}
	if ks.Unsigning == nil {
		t.Fatal("the key set records no turn-off")
	}
	return *ks.Unsigning
}

// unsigningEvents checks the Unsigning Events of DNSZone name: the DS withdrawn, the parent
// answering none, the zone served unsigned.
func unsigningEvents(t *testing.T, c *cluster, ns, name string) {
	t.Helper()
	eventually(t, 10*time.Second, "the turn-off's Events", func() error {
		var events corev1.EventList
		if err := c.client.List(c.ctx(), &events, client.InNamespace(ns)); err != nil {
			return err
		}
		var got []string
		for _, e := range events.Items {
			if e.InvolvedObject.Name == name && e.Reason == dnsv1.ReasonUnsigning {
				got = append(got, e.Message)
			}
		}
		for _, want := range []string{"leaves the parent link first", "every parent name server answers no DS", "the zone is served unsigned"} {
			if !slices.ContainsFunc(got, func(m string) bool { return strings.Contains(m, want) }) {
				return fmt.Errorf("no Unsigning Event saying %q in %q", want, got)
			}
		}
		return nil
	})
}
