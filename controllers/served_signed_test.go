package controllers_test

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/conditions"
	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/pkg/dnsclient"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/dnsserver"
	"github.com/dnsplane/dnsplane/pkg/provider/factory"
)

// TestManager_ServedWaitsForEveryServerToAnswerSigned: a signed DNSZone of the embedded server
// has a second name server (a --local-notify target) that serves the same zone store without
// the zone's keys, as a replica whose signer has not loaded them does. A change it answers at
// the change's serial, unsigned, is Served=False Propagating, naming it; once it signs with the
// zone's keys, the change is Served=True.
func TestManager_ServedWaitsForEveryServerToAnswerSigned(t *testing.T) {
	const ns, zone = "served-signed", "served-signed.test"
	replicaAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.TCPUDP(t, "127.0.0.1")))
	c := startClusterWith(t, "served-signed", time.Hour, 5*time.Hour, clusterOptions{DNSAddr: "127.0.0.1:0",
		NotifyTargets: []string{replicaAddr}, ServedInterval: 500 * time.Millisecond})
	replica := dnstest.ServeWith(t, c.store, dnsserver.ServerOptions{Addr: replicaAddr})
	c.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dns"}, Type: factory.TypeLocal})
	z := zoneObj(ns, "z", zone, signed(""))
	c.create(z)
	keys := signingKeys(t, c, ns, "z", zone)

	ep := endpointObj(ns, "web", dnsv1.Endpoint{DNSName: "web." + zone, RecordType: "A", Targets: dnsv1.Targets{"192.0.2.20"}})
	c.create(ep)
	c.waitCondition(ep, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, 60*time.Second)
	cond := conditions.Wait(t, c.client, ep, dnsv1.ConditionServed, conditions.Want{Status: metav1.ConditionFalse, Reason: dnsv1.ReasonPropagating,
		Message: func(m string) bool { return strings.Contains(m, replicaAddr) && strings.Contains(m, "unsigned") }}, 30*time.Second)
	t.Logf("Propagating: %s", cond.Message)
	got := &dnsv1.DNSEndpoint{}
	if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(ep), got); err != nil {
		t.Fatal(err)
	}
	// The replica answers the change's serial: only the signatures are missing.
	serial, err := (dnsclient.Client{}).Serial(c.ctx(), replicaAddr, zone)
	if err != nil || len(got.Status.Served) != 1 || int64(serial) < got.Status.Served[0].Serial {
		t.Fatalf("replica serial %d (%v), status.served %+v: want the replica at the change's serial", serial, err, got.Status.Served)
	}

	if err := replica.SetSigning(zone, &dnssec.Policy{Keys: keys}); err != nil {
		t.Fatal(err)
	}
	cond = c.waitCondition(ep, dnsv1.ConditionServed, metav1.ConditionTrue, dnsv1.ReasonServed, 60*time.Second)
	t.Logf("Served once the replica signs: %s", cond.Message)
}

// signingKeys waits until DNSZone name in ns has its keys in status.dnssec and the embedded
// server answers zone's SOA signed, and returns the key set of its key Secret.
func signingKeys(t *testing.T, c *cluster, ns, name, zone string) dnssec.KeySet {
	t.Helper()
	var keys dnssec.KeySet
	eventually(t, time.Minute, "the zone's keys, signing at the embedded server", func() error {
		var sec corev1.Secret
		if err := c.client.Get(c.ctx(), client.ObjectKey{Namespace: ns, Name: name + "-dnssec"}, &sec); err != nil {
			return err
		}
		ks, err := dnssec.ParseKeySet(sec.Data[dnssec.SecretKey])
		if err != nil {
			return err
		}
		z := &dnsv1.DNSZone{}
		if err := c.client.Get(c.ctx(), client.ObjectKey{Namespace: ns, Name: name}, z); err != nil {
			return err
		}
		if z.Status.DNSSEC == nil || len(z.Status.DNSSEC.Keys) == 0 {
			return fmt.Errorf("no keys in status.dnssec")
		}
		if _, sigs, err := (dnsclient.Client{}).SignedSerial(c.ctx(), c.dnsAddr, zone); err != nil || len(sigs) == 0 {
			return fmt.Errorf("the embedded server's SOA: %d RRSIGs (%v)", len(sigs), err)
		}
		keys = ks
		return nil
	})
	return keys
}
