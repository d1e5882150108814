//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

// Real input: an existing zone of a few thousand records imported from an RFC 1035 zone file and
// adopted, and manifests in the shapes people publish (testdata/).

const (
	legacyZone     = "legacy.example.test"
	legacyZoneFile = "testdata/legacy.example.test.zone" // go run e2e/testdata/gen/main.go
	legacyNS       = "legacy"
)

// importZoneFile loads an RFC 1035 zone file into PowerDNS as zone, replacing any zone of that
// name: with pdnsutil load-zone on the PowerDNS this harness started (the way an operator imports
// a zone), else through the HTTP API (rrsets parsed from the file with miekg/dns).
func importZoneFile(t *testing.T, zone, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	if suite.pdnsDir != "" {
		cmd := exec.Command("pdnsutil", "--config-dir="+suite.pdnsDir, "load-zone", zone, abs)
		cmd.Env = append(os.Environ(), "PATH=/usr/sbin:/usr/local/sbin:"+os.Getenv("PATH"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("pdnsutil load-zone %s %s: %v\n%s", zone, abs, err, out)
		}
		return "pdnsutil load-zone"
	}
	if err := importZoneAPI(zone, abs); err != nil {
		t.Fatalf("import %s into PowerDNS through its API: %v", abs, err)
	}
	return "PowerDNS HTTP API"
}

func importZoneAPI(zone, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	type record struct {
		Content  string `json:"content"`
		Disabled bool   `json:"disabled"`
	}
	type rrset struct {
		Name    string   `json:"name"`
		Type    string   `json:"type"`
		TTL     uint32   `json:"ttl"`
		Records []record `json:"records"`
	}
	sets := map[[2]string]*rrset{}
	var order [][2]string
	zp := dns.NewZoneParser(f, dns.Fqdn(zone), path)
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		h := rr.Header()
		k := [2]string{strings.ToLower(h.Name), dns.TypeToString[h.Rrtype]}
		if sets[k] == nil {
			sets[k] = &rrset{Name: k[0], Type: k[1], TTL: h.Ttl}
			order = append(order, k)
		}
		sets[k].Records = append(sets[k].Records, record{Content: strings.TrimPrefix(rr.String(), h.String())})
	}
	if err := zp.Err(); err != nil {
		return err
	}
	body := map[string]any{"name": dns.Fqdn(zone), "kind": "Native", "nameservers": []string{}}
	var rrsets []*rrset
	for _, k := range order {
		rrsets = append(rrsets, sets[k])
	}
	body["rrsets"] = rrsets
	base := strings.TrimSuffix(suite.pdns.APIURL, "/") + "/api/v1/servers/localhost/zones"
	if err := pdnsCall(http.MethodDelete, base+"/"+dns.Fqdn(zone), nil); err != nil && !strings.Contains(err.Error(), "404") {
		return err
	}
	return pdnsCall(http.MethodPost, base, body)
}

func pdnsCall(method, url string, body any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		return err
	}
	req.Header.Set("X-API-Key", suite.pdns.Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		return fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, msg)
	}
	return nil
}

// loadManifests decodes a multi-document YAML file into typed objects of c's scheme, as kubectl
// apply would send them; objects without a namespace (other than Namespaces) go into ns.
func loadManifests(t *testing.T, c *cluster, path, ns string) []client.Object {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := serializer.NewCodecFactory(c.scheme).UniversalDeserializer()
	rd := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var out []client.Object
	for {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, gvk, err := dec.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: decode: %v\n%s", path, err, doc)
		}
		co := obj.(client.Object)
		if co.GetNamespace() == "" && gvk.Kind != "Namespace" {
			co.SetNamespace(ns)
		}
		out = append(out, co)
	}
	return out
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, l := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.Bytes()
}

// axfrNormalized is an AXFR of zone from addr, normalized (no SOA serial, no heartbeat values).
func axfrNormalized(t *testing.T, addr, zone string) []string {
	t.Helper()
	rrs, err := axfr(addr, zone)
	if err != nil {
		t.Fatalf("AXFR %s from %s: %v", zone, addr, err)
	}
	return normalized(rrs)
}

func ownerName(line string) string { return strings.Fields(line)[0] }

// TestRealInput_AdoptedLegacyZone: an existing company zone (~3,000 records, from an RFC 1035
// zone file) is imported into PowerDNS and adopted by cluster 1 (zoneID, preserveOnDelete).
// dnsplane publishes new names beside the legacy ones, refuses names it does not own (a legacy
// host, an external-dns-owned name) with OwnershipConflict, and never changes or removes a legacy
// record: AXFRs before, during and after compare equal but for dnsplane's own names and registry
// records. Deleting the dnsplane objects gives back the original zone.
func TestRealInput_AdoptedLegacyZone(t *testing.T) {
	onFailure(t)
	c := suite.clusters[0]
	how := importZoneFile(t, legacyZone, legacyZoneFile)
	imported := axfrNormalized(t, suite.pdns.DNSAddr, legacyZone)
	if len(imported) < 2500 {
		t.Fatalf("AXFR of the imported %s: %d records, want about 3,000", legacyZone, len(imported))
	}
	t.Logf("imported %s from %s with %s: %d records in the AXFR", legacyZone, legacyZoneFile, how, len(imported))

	// Adopt.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: legacyNS, Name: pdnsSecret}, Type: "dnsplane.io/pdns",
		StringData: map[string]string{
			"PDNS_API_URL":     suite.pdns.APIURL,
			"PDNS_API_KEY":     suite.pdns.Key,
			"PDNS_NAMESERVERS": "ns1." + legacyZone + ",ns2." + legacyZone,
			"DNS_ADDRESS":      suite.pdns.DNSAddr,
		}}
	zone := func() *dnsv1.DNSZone {
		return &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: legacyNS, Name: "legacy"}, Spec: dnsv1.DNSZoneSpec{
			Zone: legacyZone, ProviderRef: dnsv1.SecretReference{Name: pdnsSecret}, ZoneID: dns.Fqdn(legacyZone), PreserveOnDelete: true}}
	}
	c.apply(t, namespace(legacyNS), secret, zone())
	z := zone()
	_, adopt := c.waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 60*time.Second)
	t.Logf("cluster %s adopted %s (zoneID %s, nameServers %v): Ready in %s", c.geo, legacyZone, z.Status.ZoneID, z.Status.NameServers, adopt.Round(10*time.Millisecond))
	before := axfrNormalized(t, suite.pdns.DNSAddr, legacyZone)
	if r, a := diff(imported, before); len(r)+len(a) > 0 {
		t.Fatalf("adopting %s changed it:\n  removed %s\n  added %s", legacyZone, strings.Join(r, "\n          "), strings.Join(a, "\n          "))
	}

	// Publish beside the legacy records, and try to take two names that are not ours.
	fq := func(l string) string { return l + "." + legacyZone }
	newEP := &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: legacyNS, Name: "new-service"}, Spec: dnsv1.DNSEndpointSpec{PublishingSpec: dnsv1.PublishingSpec{
		Endpoints: []dnsv1.Endpoint{
			{DNSName: fq("new-api"), RecordType: "A", RecordTTL: 60, Targets: dnsv1.Targets{"192.0.2.150", "192.0.2.151"}},
			{DNSName: fq("new-www"), RecordType: "CNAME", RecordTTL: 60, Targets: dnsv1.Targets{fq("web-lb")}},
			{DNSName: fq("new-verify"), RecordType: "TXT", RecordTTL: 60, Targets: dnsv1.Targets{"new-verification=d1e2f3"}},
		}}}}
	shared := &dnsv1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: legacyNS, Name: "shared"}, Spec: dnsv1.DNSRecordSpec{
		RootHost: fq("shared"), PublishingSpec: dnsv1.PublishingSpec{
			Endpoints: []dnsv1.Endpoint{{DNSName: fq("shared"), RecordType: "A", RecordTTL: 30, Targets: dnsv1.Targets{"192.0.2.160"}}}}}}
	claimLegacy := &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: legacyNS, Name: "claim-web-001"}, Spec: dnsv1.DNSEndpointSpec{PublishingSpec: dnsv1.PublishingSpec{
		Endpoints: []dnsv1.Endpoint{
			{DNSName: fq("web-001"), RecordType: "A", RecordTTL: 60, Targets: dnsv1.Targets{"192.0.2.99"}},
			{DNSName: fq("www"), RecordType: "CNAME", RecordTTL: 60, Targets: dnsv1.Targets{fq("new-www")}},
		}}}}
	claimExternal := &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: legacyNS, Name: "claim-legacy"}, Spec: dnsv1.DNSEndpointSpec{PublishingSpec: dnsv1.PublishingSpec{
		Endpoints: []dnsv1.Endpoint{{DNSName: fq("legacy"), RecordType: "A", RecordTTL: 60, Targets: dnsv1.Targets{"192.0.2.98"}}}}}}
	start := time.Now()
	c.apply(t, newEP, shared, claimLegacy, claimExternal)
	c.waitCondition(t, newEP, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, 60*time.Second)
	c.waitCondition(t, shared, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, 60*time.Second)
	t.Logf("DNSEndpoint %s and DNSRecord %s Published in the adopted zone after %s", newEP.Name, shared.Name, time.Since(start).Round(10*time.Millisecond))
	cond, _ := c.waitCondition(t, claimLegacy, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonOwnershipConflict, 60*time.Second)
	t.Logf("claim of legacy web-001 and www: Ready=False %s: %s", cond.Reason, cond.Message)
	for _, n := range []string{fq("web-001"), fq("www")} {
		if !strings.Contains(cond.Message, n) {
			t.Errorf("OwnershipConflict does not name %s: %q", n, cond.Message)
		}
	}
	cond, _ = c.waitCondition(t, claimExternal, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonOwnershipConflict, 60*time.Second)
	t.Logf("claim of the external-dns name: Ready=False %s: %s", cond.Reason, cond.Message)
	if !strings.Contains(cond.Message, "external-dns") {
		t.Errorf("OwnershipConflict for %s does not name external-dns: %q", fq("legacy"), cond.Message)
	}
	waitServed(t, 20*time.Second, suite.pdns.DNSAddr, fq("new-api"), []string{"192.0.2.150", "192.0.2.151"})
	waitServed(t, 20*time.Second, suite.pdns.DNSAddr, fq("shared"), []string{"192.0.2.160"})
	waitServed(t, 5*time.Second, suite.pdns.DNSAddr, fq("web-001"), []string{"10.10.0.2"})
	waitServed(t, 5*time.Second, suite.pdns.DNSAddr, fq("legacy"), []string{"192.0.2.200"})
	if r, err := query(suite.pdns.DNSAddr, fq("www"), dns.TypeCNAME); err != nil || len(r.Answer) != 1 || r.Answer[0].(*dns.CNAME).Target != dns.Fqdn(fq("web-lb")) {
		t.Errorf("www.%s: %v %v; want the legacy CNAME to web-lb", legacyZone, r, err)
	}

	// The diff: dnsplane's new names and its registry records, nothing else.
	during := axfrNormalized(t, suite.pdns.DNSAddr, legacyZone)
	removed, added := diff(before, during)
	if len(removed) > 0 {
		t.Errorf("publishing removed or changed legacy records:\n  %s", strings.Join(removed, "\n  "))
	}
	ours := map[string]bool{}
	for _, n := range []string{"new-api", "new-www", "new-verify", "shared"} {
		ours[dns.Fqdn(fq(n))] = false
	}
	registry := 0
	for _, l := range added {
		n := ownerName(l)
		if _, ok := ours[n]; ok {
			ours[n] = true
			continue
		}
		if strings.HasPrefix(n, "dp-") && strings.Contains(l, " TXT ") && strings.Contains(l, "heritage=dnsplane") {
			registry++
			continue
		}
		t.Errorf("publishing added a record that is neither a new name nor a registry record: %s", l)
	}
	for n, seen := range ours {
		if !seen {
			t.Errorf("AXFR: no record at %s", n)
		}
	}
	if registry < len(ours) {
		t.Errorf("AXFR: %d registry records, want at least %d", registry, len(ours))
	}
	if d := duplicates(during); len(d) > 0 {
		t.Errorf("AXFR: duplicated records %v", d)
	}
	t.Logf("AXFR %s with dnsplane's records: %d records; added %d (%d at new names, %d registry), removed or changed %d",
		legacyZone, len(during), len(added), len(added)-registry, registry, len(removed))

	// Leave: delete every dnsplane object; the zone is what it was.
	start = time.Now()
	for _, obj := range []client.Object{newEP, shared, claimLegacy, claimExternal} {
		if err := c.C().Delete(ctx(t), obj); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	waitGone(t, c, newEP, shared, claimLegacy, claimExternal)
	var after []string
	eventually(t, 20*time.Second, "AXFR of "+legacyZone+" equals the original", func() error {
		after = axfrNormalized(t, suite.pdns.DNSAddr, legacyZone)
		if r, a := diff(before, after); len(r)+len(a) > 0 {
			return fmt.Errorf("removed %v added %v", r, a)
		}
		return nil
	})
	t.Logf("dnsplane objects deleted; AXFR back to the original %d records after %s", len(after), time.Since(start).Round(10*time.Millisecond))
	if err := c.C().Delete(ctx(t), zone()); err != nil {
		t.Fatal(err)
	}
	waitGone(t, c, zone())
	final := axfrNormalized(t, suite.pdns.DNSAddr, legacyZone)
	if r, a := diff(before, final); len(r)+len(a) > 0 {
		t.Errorf("deleting the DNSZone (preserveOnDelete) changed %s: removed %v added %v", legacyZone, r, a)
	}
	t.Logf("DNSZone deleted (preserveOnDelete): %s still served with its %d original records", legacyZone, len(final))
}

func waitGone(t *testing.T, c *cluster, objs ...client.Object) {
	t.Helper()
	eventually(t, 60*time.Second, "cluster "+c.geo+": objects deleted", func() error {
		for _, obj := range objs {
			cur := obj.DeepCopyObject().(client.Object)
			if err := c.C().Get(ctx(t), client.ObjectKeyFromObject(obj), cur); err == nil {
				return fmt.Errorf("%T %s/%s still there (finalizers %v)", obj, obj.GetNamespace(), obj.GetName(), cur.GetFinalizers())
			} else if !apierrors.IsNotFound(err) {
				return err
			}
		}
		return nil
	})
}

// TestPublishedManifests: manifests in the shapes people publish, decoded from testdata/manifests
// and applied unchanged through the API server of cluster 1, on its embedded DNS server.
func TestPublishedManifests(t *testing.T) {
	onFailure(t)
	c := suite.clusters[0]

	t.Run("external-dns DNSEndpoints", func(t *testing.T) {
		const ns = "external-dns-examples"
		c.apply(t, namespace(ns), localSecretObj(ns), &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bar"},
			Spec: dnsv1.DNSZoneSpec{Zone: "bar.com", ProviderRef: dnsv1.SecretReference{Name: localSecret}}})
		objs := loadManifests(t, c, "testdata/manifests/external-dns-dnsendpoints.yaml", ns)
		start := time.Now()
		c.apply(t, objs...)
		for _, o := range objs {
			c.waitCondition(t, o, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, 60*time.Second)
			t.Logf("DNSEndpoint %s: Published %s after apply", o.GetName(), time.Since(start).Round(10*time.Millisecond))
		}
		waitServed(t, 10*time.Second, c.dnsAddr, "foo.bar.com", []string{"192.168.99.216", "192.168.99.217"})
		eventually(t, 10*time.Second, "txt.bar.com TXT", func() error {
			r, err := query(c.dnsAddr, "txt.bar.com", dns.TypeTXT)
			if err != nil {
				return err
			}
			var got []string
			for _, rr := range r.Answer {
				if x, ok := rr.(*dns.TXT); ok {
					got = append(got, strings.Join(x.Txt, ""))
				}
			}
			slices.Sort(got)
			if want := []string{"some-verification-token=abc123", "v=spf1 include:_spf.google.com ~all"}; !slices.Equal(got, want) {
				return fmt.Errorf("TXT %q, want %q", got, want)
			}
			return nil
		})
		eventually(t, 10*time.Second, "www.bar.com CNAME", func() error {
			r, err := query(c.dnsAddr, "www.bar.com", dns.TypeCNAME)
			if err != nil {
				return err
			}
			for _, rr := range r.Answer {
				if x, ok := rr.(*dns.CNAME); ok && x.Target == "foo.bar.com." {
					return nil
				}
			}
			return fmt.Errorf("answer %v", r.Answer)
		})
		// Weighted (aws/weight 50/50 with setIdentifier): the embedded server picks per query;
		// every answer is one of the sets, and both sets are served.
		blue, green := []string{"10.0.0.1", "10.0.0.2"}, []string{"10.0.1.1"}
		seen := map[string]int{}
		for i := 0; i < 200 && (seen["blue"] == 0 || seen["green"] == 0 || i < 40); i++ {
			got, err := answerA(c.dnsAddr, "weighted.bar.com")
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case slices.Equal(got, blue):
				seen["blue"]++
			case slices.Equal(got, green):
				seen["green"]++
			default:
				seen[strings.Join(got, ",")]++
			}
		}
		t.Logf("weighted.bar.com: answers by set %v", seen)
		if len(seen) != 2 || seen["blue"] == 0 || seen["green"] == 0 {
			t.Errorf("weighted.bar.com: answers %v; want only the blue set %v and the green set %v, both", seen, blue, green)
		}
	})

	t.Run("platform root and 5 cluster zones", func(t *testing.T) {
		objs := loadManifests(t, c, "testdata/manifests/platform-root-5-clusters.yaml", "default")
		start := time.Now()
		c.apply(t, objs...)
		var zones []*dnsv1.DNSZone
		for _, o := range objs {
			if z, ok := o.(*dnsv1.DNSZone); ok {
				zones = append(zones, z)
			}
		}
		if len(zones) != 6 {
			t.Fatalf("%d DNSZones in the manifest, want 6", len(zones))
		}
		for _, z := range zones {
			c.waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 90*time.Second)
		}
		t.Logf("all 6 DNSZones Ready %s after apply", time.Since(start).Round(10*time.Millisecond))
		rrs, err := axfr(c.dnsAddr, "platform.example.test")
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 5; i++ {
			child := fmt.Sprintf("c%d.platform.example.test.", i)
			var ns, glue []string
			for _, rr := range rrs {
				switch r := rr.(type) {
				case *dns.NS:
					if r.Hdr.Name == child {
						ns = append(ns, r.Ns)
					}
				case *dns.A:
					if strings.HasSuffix(r.Hdr.Name, "."+child) {
						glue = append(glue, r.Hdr.Name+" "+r.A.String())
					}
				}
			}
			if len(ns) == 0 {
				t.Errorf("AXFR platform.example.test: no NS for %s", child)
			}
			for _, n := range ns {
				if strings.HasSuffix(n, "."+child) && !slices.ContainsFunc(glue, func(g string) bool { return strings.HasPrefix(g, n+" ") }) {
					t.Errorf("AXFR platform.example.test: in-zone NS %s of %s without glue (%v)", n, child, glue)
				}
			}
			t.Logf("AXFR platform.example.test: %s NS %v glue %v", child, ns, glue)
		}
	})

	t.Run("k8gb-style Gslb for an Ingress", func(t *testing.T) {
		objs := loadManifests(t, c, "testdata/manifests/k8gb-gslb.yaml", "default")
		c.apply(t, objs...)
		var ing *networkingv1.Ingress
		var g *dnsv1.Gslb
		for _, o := range objs {
			switch x := o.(type) {
			case *networkingv1.Ingress:
				ing = x
			case *dnsv1.Gslb:
				g = x
			}
		}
		host := ing.Spec.Rules[0].Host
		const lbIP = "203.0.113.80"
		// No ingress controller here: write the address it would have written.
		eventually(t, 20*time.Second, "Ingress status", func() error {
			if err := c.C().Get(ctx(t), clientKey(ing), ing); err != nil {
				return err
			}
			ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: lbIP}}
			return c.C().Status().Update(ctx(t), ing)
		})
		start := time.Now()
		var cond *metav1.Condition
		eventually(t, 60*time.Second, "Gslb healthy, Ready Published or PeerErrors", func() error {
			if err := c.C().Get(ctx(t), clientKey(g), g); err != nil {
				return err
			}
			if h := g.Status.ServiceHealth[host]; h != "Healthy" {
				return fmt.Errorf("serviceHealth %v", g.Status.ServiceHealth)
			}
			if cond = meta.FindStatusCondition(g.Status.Conditions, dnsv1.ConditionReady); cond == nil {
				return fmt.Errorf("no Ready condition")
			}
			if cond.Reason != dnsv1.ReasonPublished && cond.Reason != dnsv1.ReasonPeerErrors {
				return fmt.Errorf("Ready=%s %s: %s", cond.Status, cond.Reason, cond.Message)
			}
			return nil
		})
		waitServed(t, 30*time.Second, c.dnsAddr, host, []string{lbIP})
		t.Logf("Gslb %s: serviceHealth %v, healthyRecords %v, Ready=%s %s (%s); %s answers %s at %s, %s after the Ingress got its address",
			g.Name, g.Status.ServiceHealth, g.Status.HealthyRecords, cond.Status, cond.Reason, cond.Message, host, lbIP, c.dnsAddr, time.Since(start).Round(10*time.Millisecond))
	})
}
