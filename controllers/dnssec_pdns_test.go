package controllers_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/dnszone"
	"github.com/dnsplane/dnsplane/internal/testing/faultproxy"
	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
)

// pdnsSOAMinimum sets the MINIMUM of zone's SOA at srv, the TTL PowerDNS serves the zone's
// DNSKEY RRset with, to minimum seconds.
func pdnsSOAMinimum(t *testing.T, srv pdnstest.Server, zone string, minimum int) {
	t.Helper()
	code, body := srv.API(t, "GET", "/zones/"+dns.Fqdn(zone), "")
	var z struct {
		RRSets []struct {
			Name, Type string
			TTL        int
			Records    []struct{ Content string }
		}
	}
	if err := json.Unmarshal([]byte(body), &z); code != 200 || err != nil {
		t.Fatalf("GET zone %s: %d %v", zone, code, err)
	}
	for _, rs := range z.RRSets {
		if rs.Type != "SOA" {
			continue
		}
		f := strings.Fields(rs.Records[0].Content)
		f[len(f)-1] = fmt.Sprint(minimum)
		patch := fmt.Sprintf(`{"rrsets":[{"name":%q,"type":"SOA","ttl":%d,"changetype":"REPLACE","records":[{"content":%q,"disabled":false}]}]}`,
			rs.Name, rs.TTL, strings.Join(f, " "))
		if code, body := srv.API(t, "PATCH", "/zones/"+dns.Fqdn(zone), patch); code != 204 {
			t.Fatalf("PATCH SOA of %s: %d %s", zone, code, body)
		}
		return
	}
	t.Fatalf("zone %s has no SOA", zone)
}

// servedTags are the key tags of the DNSKEY RRset addr answers for zone, sorted.
func servedTags(t *testing.T, addr, zone string) []uint16 {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(zone), dns.TypeDNSKEY)
	m.SetEdns0(4096, true)
	r, _, err := (&dns.Client{Net: "tcp", Timeout: 5 * time.Second}).Exchange(m, addr)
	if err != nil {
		t.Fatal(err)
	}
	var tags []uint16
	for _, rr := range r.Answer {
		if k, ok := rr.(*dns.DNSKEY); ok {
			tags = append(tags, k.KeyTag())
		}
	}
	slices.Sort(tags)
	return tags
}

// statusTags are the tags of status.dnssec.keys, sorted, and the tag of its active key in role.
func statusTags(st *dnsv1.DNSSECStatus, role string) ([]uint16, int32) {
	var tags []uint16
	var active int32
	for _, k := range st.Keys {
		tags = append(tags, uint16(k.Tag))
		if k.Role == role && k.State == string(dnssec.Active) {
			active = k.Tag
		}
	}
	slices.Sort(tags)
	return tags, active
}

// signedPDNSZone starts a cluster with rollover TTLs of 2 s (and opts) and namespace ns with its
// Secret "dns" for srv (the extra keys kv), and a DNSZone zone signed with a KSK and a ZSK, whose
// SOA MINIMUM (PowerDNS's DNSKEY TTL) is then set to 2 s; it returns once the zone is signed
// (DSPending: its parent is outside dnsplane).
func signedPDNSZone(t *testing.T, srv pdnstest.Server, owner, ns, zone string, opts clusterOptions, kv ...string) (*cluster, *dnsv1.DNSZone) {
	t.Helper()
	ttl := 2 * time.Second
	opts.RolloverTTLs = dnszone.RolloverTTLs{DNSKEY: ttl, MaxZone: ttl, ParentDS: ttl}
	c := startClusterWith(t, owner, time.Hour, 5*time.Hour, opts)
	c.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, pdnsSecret(ns, srv, kv...))
	z := zoneObj(ns, "z", zone, signed(dnsv1.KeySchemeKSKZSK))
	c.create(z)
	c.waitCondition(z, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonDSPending, time.Minute)
	pdnsSOAMinimum(t, srv, zone, 2)
	if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(z), z); err != nil {
		t.Fatal(err)
	}
	return c, z
}

// annotateIn sets the annotation k=v on obj through the cluster's client.
func (c *cluster) annotateIn(obj client.Object, k, v string) {
	c.t.Helper()
	annotateWith(c.t, c.client, obj, k, v)
}

// TestDNSSEC_PowerDNSZSKRolloverToTheEnd: a DNSZone on PowerDNS with a KSK and a ZSK is signed
// by PowerDNS with the keys of its key Secret (DSPending: its parent is outside dnsplane), and a
// ZSK rollover asked by annotation runs Publish, Activate and Withdraw to the end (the KSK and
// the new ZSK alone, at PowerDNS as in status) with the rollover TTLs and PowerDNS's DNSKEY TTL
// (the SOA MINIMUM) at 2 s, while a delv loop anchored at the zone's DS gets no answer that is
// not fully validated; with spec.dnssec.enabled false, PowerDNS then answers no DNSKEY.
func TestDNSSEC_PowerDNSZSKRolloverToTheEnd(t *testing.T) {
	const zone = "zsk.pdns.test"
	srv := pdnstest.Start(t)
	c, z := signedPDNSZone(t, srv, "pdns-zsk", "pdnszsk", zone, clusterOptions{})
	if got, want := servedTags(t, srv.DNSAddr, zone), statusKeyTags(z.Status.DNSSEC); !slices.Equal(got, want) {
		t.Fatalf("PowerDNS serves DNSKEY tags %v, status.dnssec %v", got, want)
	}
	_, oldZSK := statusTags(z.Status.DNSSEC, "ZSK")
	w := delvWatch{addr: srv.DNSAddr, anchor: zone + ".", zone: zone + ".", ds: z.Status.DNSSEC.DS}
	rollUnderDelv(t, c, z, "ZSK", "PowerDNS ZSK rollover", w, 3*time.Minute, func(st *dnsv1.DNSSECStatus, _ *metav1.Condition) error {
		tags, zsk := statusTags(st, "ZSK")
		if len(tags) != 2 || zsk == oldZSK || zsk == 0 {
			return fmt.Errorf("status.dnssec %+v", st)
		}
		if got := servedTags(t, srv.DNSAddr, zone); !slices.Equal(got, tags) {
			return fmt.Errorf("PowerDNS serves DNSKEY tags %v, want %v", got, tags)
		}
		return nil
	})
	// enabled: false removes the zone's keys from PowerDNS: it answers no DNSKEY.
	eventually(t, 20*time.Second, "spec.dnssec.enabled false", func() error {
		if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(z), z); err != nil {
			return err
		}
		z.Spec.DNSSEC.Enabled = false
		return c.client.Update(c.ctx(), z)
	})
	c.waitCondition(z, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonUnsigned, time.Minute)
	if got := servedTags(t, srv.DNSAddr, zone); len(got) != 0 {
		t.Fatalf("with spec.dnssec.enabled false, PowerDNS serves DNSKEY tags %v", got)
	}
}

// statusKeyTags are the tags of status.dnssec.keys, sorted.
func statusKeyTags(st *dnsv1.DNSSECStatus) []uint16 {
	tags, _ := statusTags(st, "")
	return tags
}

// TestDNSSEC_PowerDNSRefusingKeysKeepsTheRollover: while PowerDNS refuses every cryptokeys
// write (HTTP 500 from a proxy in front of its API), a ZSK rollover asked by annotation stays in
// ZSK Publish, PowerDNS keeps serving the old keys (which delv still validates), the zone is
// Secure=False, reason ProviderActionNeeded, with a message that quotes no private key, and the
// hand-over is tried again about once per SOA poll (1 s), not in a hot loop. Once PowerDNS takes
// the writes again, the rollover runs to its end.
func TestDNSSEC_PowerDNSRefusingKeysKeepsTheRollover(t *testing.T) {
	const zone = "refuse.pdns.test"
	srv := pdnstest.Start(t)
	proxy := faultproxy.New(srv.APIURL, faultproxy.Options{})
	t.Cleanup(proxy.Close)
	c, z := signedPDNSZone(t, srv, "pdns-refuse", "pdnsrefuse", zone, clusterOptions{SOAPollInterval: time.Second},
		"PDNS_API_URL", proxy.URL())
	_, oldZSK := statusTags(z.Status.DNSSEC, "ZSK")
	oldTags := statusKeyTags(z.Status.DNSSEC)
	var refused atomic.Int64
	proxy.SetPolicy(faultproxy.Writes(func(r faultproxy.Request) faultproxy.Kind {
		if strings.Contains(r.HTTP.URL.Path, "/cryptokeys") {
			refused.Add(1)
			return faultproxy.Status500
		}
		return faultproxy.Pass
	}))
	d := startDelv(t, delvWatch{addr: srv.DNSAddr, anchor: zone + ".", zone: zone + ".", ds: z.Status.DNSSEC.DS}, nil, "")
	c.annotateIn(z, dnszone.AnnotationRollover, "ZSK")
	cond := c.waitCondition(z, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonProviderActionNeeded, time.Minute)
	for _, priv := range keyPrivates(t, c, z) {
		if strings.Contains(cond.Message, priv) {
			t.Fatalf("the Secure message quotes a private key: %s", cond.Message)
		}
	}
	before := refused.Load()
	time.Sleep(6 * time.Second)
	tries := refused.Load() - before
	d.end(t, "with the cryptokeys writes refused")
	ks := keySetIn(t, c, z)
	if ks.Rollover == nil || ks.Rollover.Role != dnssec.RoleZSK || ks.Rollover.Phase != dnssec.PhasePublish {
		t.Fatalf("with the cryptokeys writes refused, rollover %+v; want ZSK Publish", ks.Rollover)
	}
	if got := servedTags(t, srv.DNSAddr, zone); !slices.Equal(got, oldTags) {
		t.Fatalf("with the cryptokeys writes refused, PowerDNS serves DNSKEY tags %v; want the old %v", got, oldTags)
	}
	if tries < 2 || tries > 15 {
		t.Fatalf("%d refused hand-overs in 6 s with a 1 s SOA poll; want a few (no hot loop, and tried again)", tries)
	}
	t.Logf("refused hand-overs in 6 s: %d; Secure message: %s", tries, cond.Message)
	proxy.SetPolicy(faultproxy.None)
	eventually(t, 3*time.Minute, "the ZSK rollover's end once PowerDNS takes the keys", func() error {
		if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(z), z); err != nil {
			return err
		}
		st := z.Status.DNSSEC
		sec := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionSecure)
		if st == nil || sec == nil {
			return fmt.Errorf("no status.dnssec or Secure")
		}
		tags, zsk := statusTags(st, "ZSK")
		if st.RolloverPhase != "" || len(tags) != 2 || zsk == oldZSK || sec.Reason != dnsv1.ReasonDSPending {
			return fmt.Errorf("status.dnssec %+v; Secure %s", st, sec.Reason)
		}
		if got := servedTags(t, srv.DNSAddr, zone); !slices.Equal(got, tags) {
			return fmt.Errorf("PowerDNS serves DNSKEY tags %v, want %v", got, tags)
		}
		return nil
	})
}

// keySetIn reads the key set of z's key Secret through the cluster's client.
func keySetIn(t *testing.T, c *cluster, z *dnsv1.DNSZone) dnssec.KeySet {
	t.Helper()
	var sec corev1.Secret
	if err := c.client.Get(c.ctx(), client.ObjectKey{Namespace: z.Namespace, Name: z.Name + "-dnssec"}, &sec); err != nil {
		t.Fatal(err)
	}
	ks, err := dnssec.ParseKeySet(sec.Data[dnssec.SecretKey])
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// keyPrivates are the private-key values of z's keys (the base64 after "PrivateKey:").
func keyPrivates(t *testing.T, c *cluster, z *dnsv1.DNSZone) []string {
	t.Helper()
	var out []string
	for _, k := range keySetIn(t, c, z).Keys {
		for line := range strings.SplitSeq(k.DNSKEY.PrivateKeyString(k.Private), "\n") {
			if v, ok := strings.CutPrefix(line, "PrivateKey: "); ok {
				out = append(out, strings.TrimSpace(v))
			}
		}
	}
	return out
}
