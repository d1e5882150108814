package controllers_test

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
)

// dynZone creates, in a new namespace ns, the DNSZone "zone" of zone binding the key Secret
// "acme-key" (key name acme-key, acmeSecret), and waits until it is Ready with its keys.
func dynZone(t *testing.T, ns, zone string) *dnsv1.DNSZone {
	t.Helper()
	namespace(t, ns)
	z := zoneObj(ns, "zone", zone, func(z *dnsv1.DNSZone) {
		z.Spec.DynamicUpdates = []dnsv1.DynamicUpdate{{KeySecretRef: dnsv1.SecretReference{Name: "acme-key"}}}
	})
	create(t, tsigSecret(ns, "acme-key", "acme-key", "hmac-sha256", acmeSecret), z)
	waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	waitCondition(t, z, dnsv1.ConditionDynamicUpdatesReady, metav1.ConditionTrue, dnsv1.ReasonKeysResolved)
	return z
}

// txtRR is one TXT record, for an UPDATE's sections.
func txtRR(t *testing.T, s string) []dns.RR {
	t.Helper()
	rr, err := dns.NewRR(s)
	if err != nil {
		t.Fatal(err)
	}
	return []dns.RR{rr}
}

// updateMsg is an UPDATE of zone built by build, signed (at exchange) with acme-key.
func updateMsg(zone string, build func(m *dns.Msg)) *dns.Msg {
	m := new(dns.Msg)
	m.SetUpdate(dns.Fqdn(zone))
	build(m)
	m.SetTsig("acme-key.", dns.HmacSHA256, 300, time.Now().Unix())
	return m
}

// exchange sends m (UDP) to the suite's server signed with acme-key, and returns the rcode and
// how long the answer took; safe in a goroutine.
func exchange(m *dns.Msg) (int, time.Duration, error) {
	c := &dns.Client{Timeout: 15 * time.Second, TsigSecret: map[string]string{"acme-key.": acmeSecret}}
	start := time.Now()
	r, _, err := c.Exchange(m, dnsAddr)
	if err != nil {
		return 0, time.Since(start), err
	}
	return r.Rcode, time.Since(start), nil
}

// sendWire sends one packed message over UDP to the suite's server, as a client retransmitting
// it sends the same bytes again, and returns the answer's rcode and how long it took.
func sendWire(wire []byte) (int, time.Duration, error) {
	start := time.Now()
	conn, err := net.Dial("udp", dnsAddr)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = conn.Close() }()
	if err := conn.SetDeadline(start.Add(15 * time.Second)); err != nil {
		return 0, 0, err
	}
	if _, err := conn.Write(wire); err != nil {
		return 0, 0, err
	}
	buf := make([]byte, dns.MaxMsgSize)
	n, err := conn.Read(buf)
	if err != nil {
		return 0, time.Since(start), err
	}
	var r dns.Msg
	if err := r.Unpack(buf[:n]); err != nil {
		return 0, time.Since(start), err
	}
	return r.Rcode, time.Since(start), nil
}

// TestDynamicUpdates_RefusedUpdateChangesNothingLater: a refused UPDATE leaves nothing behind
// (RFC 2136 §3.3-3.4). A DNSEndpoint "www" holds _acme-challenge.www's TXT; an UPDATE adding a
// value there is REFUSED (another owner), and so is one adding that name and a free one at once.
// Neither leaves a DNSEndpoint, and once "www" is deleted the name serves nothing: the refused
// values are never published later, and the free name of the second UPDATE is not served.
func TestDynamicUpdates_RefusedUpdateChangesNothingLater(t *testing.T) {
	ns := "dynupdate-refused"
	dynZone(t, ns, "refused.test")
	const taken, free = "_acme-challenge.www.refused.test.", "_acme-challenge.free.refused.test."
	www := endpointObj(ns, "www", dnsv1.Endpoint{DNSName: "_acme-challenge.www.refused.test", RecordType: "TXT", Targets: dnsv1.Targets{"owner-value"}})
	create(t, www)
	waitCondition(t, www, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)
	waitTXT(t, dnsAddr, taken, "owner-value")

	for what, build := range map[string]func(m *dns.Msg){
		"a value at the taken name": func(m *dns.Msg) { m.Insert(txtRR(t, taken+` 60 IN TXT "key-value"`)) },
		"the taken name and a free one": func(m *dns.Msg) {
			m.Insert(txtRR(t, free+` 60 IN TXT "free-value"`))
			m.Insert(txtRR(t, taken+` 60 IN TXT "key-value-2"`))
		},
	} {
		rcode, _, err := exchange(updateMsg("refused.test", build))
		if err != nil || rcode != dns.RcodeRefused {
			t.Fatalf("%s: %s, %v; want REFUSED", what, dns.RcodeToString[rcode], err)
		}
	}
	eventually(t, 10*time.Second, "no dynamic-update DNSEndpoint left by the refused UPDATEs", func() error {
		if eps := dynamicUpdateEndpoints(t, ns); len(eps) != 0 {
			return fmt.Errorf("%d left, the first %s", len(eps), eps[0].Name)
		}
		return nil
	})
	waitTXT(t, dnsAddr, free)

	if err := k8s.Delete(ctxT(t), www); err != nil {
		t.Fatal(err)
	}
	waitGone(t, www)
	waitTXT(t, dnsAddr, taken)
	for range 15 { // what used to be published once the owner had gone came within seconds
		time.Sleep(200 * time.Millisecond)
		for _, name := range []string{taken, free} {
			if got, err := txtAt(dnsAddr, name); err != nil || len(got) != 0 {
				t.Fatalf("after the owner went, %s serves %q, %v: a refused UPDATE took effect", name, got, err)
			}
		}
	}
}

// TestDynamicUpdates_SquattingZoneKeysAreNotUsed: a DNSZone of another namespace for a zone a
// DNSZone already holds (ZoneConflict) binds no key, so its key of the holder's key name (the
// namespace sorts first) never verifies the holder's UPDATEs: the holder's UPDATE is NOERROR,
// and the squatter says DynamicUpdatesReady=False ZoneConflict.
func TestDynamicUpdates_SquattingZoneKeysAreNotUsed(t *testing.T) {
	holder := dynZone(t, "dynupdate-holder", "squat.test")
	sq := namespace(t, "aaa-dynupdate-squat")
	squatter := zoneObj(sq, "zone", "squat.test", func(z *dnsv1.DNSZone) {
		z.Spec.DynamicUpdates = []dnsv1.DynamicUpdate{{KeySecretRef: dnsv1.SecretReference{Name: "acme-key"}}}
	})
	create(t, tsigSecret(sq, "acme-key", "acme-key", "hmac-sha256", wrongSecret), squatter)
	waitCondition(t, squatter, dnsv1.ConditionZoneAvailable, metav1.ConditionFalse, dnsv1.ReasonZoneConflict)
	c := waitCondition(t, squatter, dnsv1.ConditionDynamicUpdatesReady, metav1.ConditionFalse, dnsv1.ReasonZoneConflict)
	t.Logf("the squatter's DynamicUpdatesReady: %s", c.Message)
	const name = "_acme-challenge.squat.test."
	rcode, _, err := exchange(updateMsg("squat.test", func(m *dns.Msg) { m.Insert(txtRR(t, name+` 60 IN TXT "holder-token"`)) }))
	if err != nil || rcode != dns.RcodeSuccess {
		t.Fatalf("the holder's UPDATE with a squatter binding its key name: %s, %v; want NOERROR", dns.RcodeToString[rcode], err)
	}
	waitTXT(t, dnsAddr, name, "holder-token")
	waitCondition(t, holder, dnsv1.ConditionDynamicUpdatesReady, metav1.ConditionTrue, dnsv1.ReasonKeysResolved)
}

// TestDynamicUpdates_ConcurrentCleanUpsOfOneName: cert-manager cleans up an apex and a wildcard
// challenge (two values of one name) at once; each concurrent delete is answered NOERROR, and
// the name serves nothing after. Two values, three times over, then four at once (the answers'
// times are logged, as the figures of a retransmission-free CleanUp).
func TestDynamicUpdates_ConcurrentCleanUpsOfOneName(t *testing.T) {
	dynZone(t, "dynupdate-cleanups", "cleanups.test")
	const name = "_acme-challenge.cleanups.test."
	for round, n := range []int{2, 2, 2, 4} {
		var values []string
		for i := range n {
			v := fmt.Sprintf("token-%d-%d", round, i)
			values = append(values, v)
			rcode, _, err := exchange(updateMsg("cleanups.test", func(m *dns.Msg) { m.Insert(txtRR(t, name+` 60 IN TXT "`+v+`"`)) }))
			if err != nil || rcode != dns.RcodeSuccess {
				t.Fatalf("Present %s: %s, %v", v, dns.RcodeToString[rcode], err)
			}
		}
		waitTXT(t, dnsAddr, name, values...)
		type result struct {
			rcode int
			took  time.Duration
			err   error
		}
		results := make([]result, n)
		var wg sync.WaitGroup
		for i, v := range values {
			m := updateMsg("cleanups.test", func(m *dns.Msg) { m.Remove(txtRR(t, name+` 60 IN TXT "`+v+`"`)) })
			wg.Go(func() {
				rcode, took, err := exchange(m)
				results[i] = result{rcode, took, err}
			})
		}
		wg.Wait()
		for i, r := range results {
			if r.err != nil || r.rcode != dns.RcodeSuccess {
				t.Fatalf("round %d: concurrent CleanUp of %s: %s after %s, %v; want NOERROR", round, values[i], dns.RcodeToString[r.rcode], r.took, r.err)
			}
			t.Logf("round %d: %d concurrent CleanUps, %s answered NOERROR in %s", round, n, values[i], r.took.Round(time.Millisecond))
		}
		if got, err := txtAt(dnsAddr, name); err != nil || len(got) != 0 {
			t.Fatalf("round %d: after every CleanUp's NOERROR the name serves %q, %v", round, got, err)
		}
	}
}

// TestDynamicUpdates_PresentWhileTheNameIsBeingCleanedUp: a new challenge's UPDATE arrives while
// the name's DNSEndpoint is still being deleted (its records' removal held at the provider): it
// waits for the deletion to end and is then written, NOERROR; the CleanUp is NOERROR too.
func TestDynamicUpdates_PresentWhileTheNameIsBeingCleanedUp(t *testing.T) {
	ns := "dynupdate-overlap"
	dynZone(t, ns, "overlap.test")
	const name = "_acme-challenge.overlap.test."
	if rcode, _, err := exchange(updateMsg("overlap.test", func(m *dns.Msg) { m.Insert(txtRR(t, name+` 60 IN TXT "old"`)) })); err != nil || rcode != dns.RcodeSuccess {
		t.Fatalf("Present: %s, %v", dns.RcodeToString[rcode], err)
	}
	waitTXT(t, dnsAddr, name, "old")
	held, release := faults.holdAt(local.FaultBeforeApplyChanges, local.ZoneID("overlap.test"))
	t.Cleanup(release)
	cleanup := make(chan error, 1)
	go func() {
		rcode, _, err := exchange(updateMsg("overlap.test", func(m *dns.Msg) { m.Remove(txtRR(t, name+` 60 IN TXT "old"`)) }))
		if err == nil && rcode != dns.RcodeSuccess {
			err = fmt.Errorf("%s", dns.RcodeToString[rcode])
		}
		cleanup <- err
	}()
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the CleanUp's removal never reached the provider")
	}
	eventually(t, 10*time.Second, "the name's DNSEndpoint being deleted", func() error {
		eps := dynamicUpdateEndpoints(t, ns)
		if len(eps) != 1 || eps[0].DeletionTimestamp.IsZero() {
			return fmt.Errorf("%d DNSEndpoints, not one being deleted", len(eps))
		}
		return nil
	})
	present := make(chan error, 1)
	go func() {
		rcode, took, err := exchange(updateMsg("overlap.test", func(m *dns.Msg) { m.Insert(txtRR(t, name+` 60 IN TXT "new"`)) }))
		if err == nil && rcode != dns.RcodeSuccess {
			err = fmt.Errorf("%s after %s", dns.RcodeToString[rcode], took)
		}
		present <- err
	}()
	select {
	case err := <-present:
		t.Fatalf("the Present answered while the name's removal is held: %v", err)
	case <-time.After(time.Second):
	}
	release()
	if err := <-cleanup; err != nil {
		t.Fatalf("CleanUp: %v", err)
	}
	if err := <-present; err != nil {
		t.Fatalf("Present during the CleanUp: %v; want NOERROR", err)
	}
	if got, err := txtAt(dnsAddr, name); err != nil || len(got) != 1 || got[0] != "new" {
		t.Fatalf("right after the Present's NOERROR the name serves %q, %v; want [new]", got, err)
	}
}

// TestDynamicUpdates_RetransmissionIsAnsweredFromTheFirst: a client that got no answer in time
// sends the same signed UPDATE again (the same ID and MAC). The copy is answered with the first
// one's rcode and not applied again: an UPDATE whose prerequisite ("no TXT here yet") its own
// write makes false is NOERROR twice, while a new UPDATE of the same content is YXRRSET.
func TestDynamicUpdates_RetransmissionIsAnsweredFromTheFirst(t *testing.T) {
	dynZone(t, "dynupdate-retransmit", "retransmit.test")
	const name = "_acme-challenge.retransmit.test."
	build := func(m *dns.Msg) {
		m.RRsetNotUsed(txtRR(t, name+` 0 IN TXT ""`))
		m.Insert(txtRR(t, name+` 60 IN TXT "once"`))
	}
	wire, _, err := dns.TsigGenerate(updateMsg("retransmit.test", build), acmeSecret, "", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, what := range []string{"the UPDATE", "its retransmission"} {
		rcode, took, err := sendWire(wire)
		if err != nil || rcode != dns.RcodeSuccess {
			t.Fatalf("%s: %s, %v; want NOERROR", what, dns.RcodeToString[rcode], err)
		}
		t.Logf("%s answered in %s", what, took.Round(time.Millisecond))
	}
	if rcode, _, err := exchange(updateMsg("retransmit.test", build)); err != nil || rcode != dns.RcodeYXRrset {
		t.Fatalf("a new UPDATE of the same content: %s, %v; want YXRRSET", dns.RcodeToString[rcode], err)
	}
	waitTXT(t, dnsAddr, name, "once")
}
