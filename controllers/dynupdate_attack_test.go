package controllers_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// TestDynamicUpdates_UnjudgedSquatterKeysAreNotUsed: a DNSZone of another namespace for a zone
// a DNSZone already holds, whose provider Secret does not exist, is never judged by the
// tenancy rules (ZoneAvailable=False ProviderNotFound, not ZoneConflict): it holds nothing, so
// its key of the holder's key name (the namespace sorts first) binds nothing either. The
// holder's UPDATE is NOERROR, and the squatter's own UPDATE signed with that key is BADKEY.
func TestDynamicUpdates_UnjudgedSquatterKeysAreNotUsed(t *testing.T) {
	dynZone(t, "dynupdate-holder2", "squat2.test")
	sq := namespace(t, "aaa-dynupdate-squat2")
	squatter := zoneObj(sq, "zone", "squat2.test", func(z *dnsv1.DNSZone) {
		z.Spec.ProviderRef = dnsv1.SecretReference{Name: "no-such-provider"}
		z.Spec.DynamicUpdates = []dnsv1.DynamicUpdate{{KeySecretRef: dnsv1.SecretReference{Name: "acme-key"}}}
	})
	create(t, tsigSecret(sq, "acme-key", "acme-key", "hmac-sha256", wrongSecret), squatter)
	waitCondition(t, squatter, dnsv1.ConditionZoneAvailable, metav1.ConditionFalse, dnsv1.ReasonProviderNotFound)
	var c *metav1.Condition
	eventually(t, 30*time.Second, "the squatter's DynamicUpdatesReady", func() error {
		var z dnsv1.DNSZone
		if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(squatter), &z); err != nil {
			return err
		}
		if c = meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionDynamicUpdatesReady); c == nil {
			return errors.New("none yet")
		}
		return nil
	})
	t.Logf("the squatter's DynamicUpdatesReady: %s %s: %s", c.Status, c.Reason, c.Message)
	const name = "_acme-challenge.squat2.test."
	rcode, _, err := exchange(updateMsg("squat2.test", func(m *dns.Msg) { m.Insert(txtRR(t, name+` 60 IN TXT "holder-token"`)) }))
	if err != nil || rcode != dns.RcodeSuccess {
		t.Fatalf("the holder's UPDATE with an unjudged squatter binding its key name: %s, %v; want NOERROR", dns.RcodeToString[rcode], err)
	}
	waitTXT(t, dnsAddr, name, "holder-token")
	if c.Status != metav1.ConditionFalse || c.Reason != dnsv1.ReasonProviderNotFound {
		t.Fatalf("the squatter's DynamicUpdatesReady is %s %s; want False %s", c.Status, c.Reason, dnsv1.ReasonProviderNotFound)
	}
}

// TestDynamicUpdates_RefusedUpdateLeavesAConcurrentOneAlone: an UPDATE adding a value at a free
// name and one at a name another owner holds (REFUSED) races an UPDATE adding another value
// at the same free name (NOERROR). Undoing the refused one takes out its own value alone: the
// accepted value is served after both answers, and the refused one is not.
func TestDynamicUpdates_RefusedUpdateLeavesAConcurrentOneAlone(t *testing.T) {
	ns := "dynupdate-undo-race"
	dynZone(t, ns, "undo-race.test")
	const taken = "_acme-challenge.www.undo-race.test."
	www := endpointObj(ns, "www", dnsv1.Endpoint{DNSName: strings.TrimSuffix(taken, "."), RecordType: "TXT", Targets: dnsv1.Targets{"owner-value"}})
	create(t, www)
	waitCondition(t, www, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)
	for i := range 3 {
		free := fmt.Sprintf("_acme-challenge.f%d.undo-race.test.", i)
		refused := updateMsg("undo-race.test", func(m *dns.Msg) {
			m.Insert(txtRR(t, free+` 60 IN TXT "refused"`))
			m.Insert(txtRR(t, taken+` 60 IN TXT "x"`))
		})
		accepted := updateMsg("undo-race.test", func(m *dns.Msg) { m.Insert(txtRR(t, free+` 60 IN TXT "accepted"`)) })
		var wg sync.WaitGroup
		var rcRefused, rcAccepted int
		var errRefused, errAccepted error
		wg.Go(func() { rcRefused, _, errRefused = exchange(refused) })
		wg.Go(func() { rcAccepted, _, errAccepted = exchange(accepted) })
		wg.Wait()
		if errRefused != nil || rcRefused != dns.RcodeRefused || errAccepted != nil || rcAccepted != dns.RcodeSuccess {
			t.Fatalf("round %d: %s, %v and %s, %v; want REFUSED and NOERROR", i, dns.RcodeToString[rcRefused], errRefused,
				dns.RcodeToString[rcAccepted], errAccepted)
		}
		eventually(t, 5*time.Second, free+" serving the accepted value alone", func() error {
			got, err := txtAt(dnsAddr, free)
			if err != nil {
				return err
			}
			if !slices.Equal(got, []string{"accepted"}) {
				return fmt.Errorf("round %d: TXT %q after the accepted UPDATE's NOERROR", i, got)
			}
			return nil
		})
	}
}

// TestDynamicUpdates_AnotherNamespacesGslbDoesNotMakeAZoneRelayed: a Gslb in another namespace
// naming a DNSZone that does not list that namespace in delegation.allowedNamespaces may not
// use the zone: it does not make the zone a Gslb zone, so the zone holder's UPDATEs are not
// relayed to the Gslb peers (here one that is down, which would make them SERVFAIL) and are
// NOERROR once written here.
func TestDynamicUpdates_AnotherNamespacesGslbDoesNotMakeAZoneRelayed(t *testing.T) {
	port := strconv.Itoa(ports.TCPUDP(t, "127.0.0.17"))
	addr := "127.0.0.17:" + port
	eu := startGslbCluster(t, "eu", addr, "192.0.2.1", []gslb.Peer{{GeoTag: "down", Addr: ports.Dead(t)}})
	const secret = "dmljdGltLXpvbmUta2V5LW5vdC1hLWdzbGItem9uZS1zZWNyZXQ="
	z := zoneObj("victim", "zone", "victim.test", func(z *dnsv1.DNSZone) {
		z.Spec.DynamicUpdates = []dnsv1.DynamicUpdate{{KeySecretRef: dnsv1.SecretReference{Name: "acme-key"}}}
	})
	eu.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "victim"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "attacker"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "victim", Name: "dns"}, Type: "dnsplane.io/local"},
		tsigSecret("victim", "acme-key", "victim-key", "hmac-sha256", secret), z)
	eu.waitCondition(z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 30*time.Second)
	eu.waitCondition(z, dnsv1.ConditionDynamicUpdatesReady, metav1.ConditionTrue, dnsv1.ReasonKeysResolved, 30*time.Second)
	eu.create(&dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "attacker", Name: "squat"}, Spec: dnsv1.GslbSpec{
		ResourceRef: dnsv1.ResourceReference{Kind: "Service", Name: "app"}, Hosts: []string{"app.victim.test"},
		ZoneRef: dnsv1.ZoneReference{Namespace: "victim", Name: "zone"}, Strategy: dnsv1.GslbStrategy{Type: "roundRobin", DNSTTLSeconds: 5}}})
	time.Sleep(time.Second) // the Gslb in the applier's cache

	m := new(dns.Msg)
	m.SetUpdate("victim.test.")
	m.Insert(txtRR(t, `_acme-challenge.victim.test. 60 IN TXT "victim-token"`))
	m.SetTsig("victim-key.", dns.HmacSHA256, 300, time.Now().Unix())
	c := &dns.Client{Timeout: 15 * time.Second, TsigSecret: map[string]string{"victim-key.": secret}}
	r, _, err := c.Exchange(m, addr)
	if err != nil || r.Rcode != dns.RcodeSuccess {
		var rc string
		if r != nil {
			rc = dns.RcodeToString[r.Rcode]
		}
		t.Fatalf("the zone holder's UPDATE with another namespace's Gslb naming its zone: %s, %v; want NOERROR, not relayed", rc, err)
	}
}
