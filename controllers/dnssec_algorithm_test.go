package controllers_test

import (
	"fmt"
	"net"
	"net/netip"
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
	"github.com/dnsplane/dnsplane/controllers/dnszone"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/provider/factory"
)

// TestDNSSEC_AlgorithmChangeByTurningOffAndOn: a zone signed with ECDSAP256SHA256 keys whose
// spec.dnssec.algorithm says ED25519 stays signed with its keys and reports
// AlgorithmChangeNotSupported with the steps (docs/dnssec.md, "Changing the algorithm"); turned
// off, once Unsigned, and on again, it is signed with ED25519 keys made for it.
func TestDNSSEC_AlgorithmChangeByTurningOffAndOn(t *testing.T) {
	ttl := 2 * time.Second
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.TCPUDP(t, "127.0.0.1")))
	c := startClusterWith(t, "dnssec-alg", time.Hour, 5*time.Hour, clusterOptions{DNSAddr: addr,
		NameServerAddr: netip.MustParseAddr("127.0.0.1"),
		RolloverTTLs:   dnszone.RolloverTTLs{DNSKEY: ttl, MaxZone: ttl, ParentDS: ttl}})
	ns, zone := "algchange", "alg.dnssec.test"
	k, err := dnssec.Generate(zone, dns.ECDSAP256SHA256, dnssec.RoleCSK, dnssec.Active, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := dnssec.KeySet{Zone: zone + ".", Keys: []dnssec.Key{k}}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	c.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dns"}, Type: factory.TypeLocal},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a-dnssec"}, StringData: map[string]string{dnssec.SecretKey: string(raw)}})
	z := zoneObj(ns, "a", zone, func(z *dnsv1.DNSZone) {
		signed("")(z)
		z.Spec.DNSSEC.Algorithm = dnsv1.AlgorithmED25519
	})
	c.create(z)
	cond := c.waitCondition(z, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonAlgorithmChangeNotSupported, time.Minute)
	if !strings.Contains(cond.Message, "set spec.dnssec.enabled to false") {
		t.Fatalf("the message gives no steps: %s", cond.Message)
	}
	setEnabled := func(on bool) {
		eventually(t, 20*time.Second, fmt.Sprintf("set enabled %v", on), func() error {
			if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(z), z); err != nil {
				return err
			}
			z.Spec.DNSSEC.Enabled = on
			return c.client.Update(c.ctx(), z)
		})
	}
	setEnabled(false)
	c.waitCondition(z, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonUnsigned, time.Minute)
	setEnabled(true)
	eventually(t, time.Minute, "signed with ED25519 keys", func() error {
		if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(z), z); err != nil {
			return err
		}
		s := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionSecure)
		if s == nil || s.Reason != dnsv1.ReasonDSPending || z.Status.DNSSEC == nil || len(z.Status.DNSSEC.Keys) != 1 {
			return fmt.Errorf("Secure %+v, status.dnssec %+v", s, z.Status.DNSSEC)
		}
		if got := z.Status.DNSSEC.Keys[0]; got.Algorithm != "ED25519" || got.Tag == int32(k.Tag()) {
			return fmt.Errorf("keys %+v", z.Status.DNSSEC.Keys)
		}
		return nil
	})
}
