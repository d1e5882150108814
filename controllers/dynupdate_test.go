package controllers_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/acmetest"
	"github.com/dnsplane/dnsplane/internal/testing/metrictest"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/internal/testing/rfc2136solver"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// The TSIG secrets of the dynamic-update stories (base64, as tsig-keygen writes them).
const (
	acmeSecret  = "YWNtZS1rZXktc2VjcmV0LWZvci1kbnNwbGFuZS10ZXN0cw=="
	wrongSecret = "bm90LXRoZS1rZXktdGhlLXpvbmUtYmluZHMtdGhpcy1vbmU="
)

// solverBin builds hack/rfc2136-solver once per test binary.
var solverBin = sync.OnceValues(func() (string, error) {
	return rfc2136solver.Build(context.Background(), "..")
})

func solver(t *testing.T) string {
	t.Helper()
	bin, err := solverBin()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// tsigSecret is a dnsplane.io/tsig Secret.
func tsigSecret(ns, name, keyName, alg, secret string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: dnsv1.SecretTypeTSIG,
		StringData: map[string]string{dnsv1.TSIGSecretName: keyName, dnsv1.TSIGSecretAlgorithm: alg, dnsv1.TSIGSecretSecret: secret}}
}

// txtAt returns the TXT values addr answers for name, sorted; NXDOMAIN and NODATA are none.
func txtAt(addr, name string) ([]string, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeTXT)
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
	if err != nil {
		return nil, err
	}
	if r.Rcode != dns.RcodeSuccess && r.Rcode != dns.RcodeNameError {
		return nil, fmt.Errorf("%s TXT at %s: %s", name, addr, dns.RcodeToString[r.Rcode])
	}
	var out []string
	for _, rr := range r.Answer {
		if t, ok := rr.(*dns.TXT); ok {
			out = append(out, strings.Join(t.Txt, ""))
		}
	}
	slices.Sort(out)
	return out, nil
}

// waitTXT waits until addr answers name's TXT with exactly want.
func waitTXT(t *testing.T, addr, name string, want ...string) {
	t.Helper()
	slices.Sort(want)
	testrun.Eventually(t, 30*time.Second, fmt.Sprintf("%s TXT %q at %s", name, want, addr), func() error {
		got, err := txtAt(addr, name)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("TXT %q", got)
		}
		return nil
	})
}

// badAuth is expectRcode's rcode for a TSIG failure: miekg/dns's client reads the NOTAUTH
// with its TSIG error as dns.ErrAuth.
const badAuth = "bad authentication"

// expectRcode fails unless err is the solver's report of the server's rcode (or, for badAuth,
// of a TSIG failure).
func expectRcode(t *testing.T, err error, rcode string) {
	t.Helper()
	want := "Server replied: " + rcode
	if rcode == badAuth {
		want = dns.ErrAuth.Error()
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("cert-manager's solver: %v; want the server's %s", err, rcode)
	}
}

// dynamicUpdateEndpoints lists the DNSEndpoints dynamic updates wrote in ns.
func dynamicUpdateEndpoints(t *testing.T, ns string) []dnsv1.DNSEndpoint {
	t.Helper()
	var l dnsv1.DNSEndpointList
	if err := k8s.List(ctxT(t), &l, client.InNamespace(ns), client.HasLabels{dnsv1.LabelDynamicUpdateZone}); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// present sends ch's UPDATE with the solver (cert-manager's RFC 2136 code) and fails the test
// unless it is NOERROR; it logs how long that took, where naming the case.
func present(t *testing.T, bin string, ch rfc2136solver.Challenge, where string) {
	t.Helper()
	start := time.Now()
	if err := rfc2136solver.Present(ctxT(t), bin, ch); err != nil {
		t.Fatal(err)
	}
	t.Logf("UPDATE to NOERROR %s: %s", where, time.Since(start).Round(time.Millisecond))
}

// TestDynamicUpdates_CertManagerSolverOnTheEmbeddedServer: DNS-01 through UPDATE on
// the embedded provider, with cert-manager v1.21.2's own rfc2136 DNS-01 code (hack/rfc2136-solver)
// against the manager's embedded server:
//   - Present (its default HMAC-MD5 and HMAC-SHA256, UDP and TCP) answers NOERROR only once the
//     record is written: the TXT is served at once, both values of an apex and a wildcard
//     challenge at the same name; it is a DNSEndpoint labelled with the zone and key;
//   - CleanUp removes each value, the last one the DNSEndpoint;
//   - another tenant's key of the same name (which writes its own zone), another secret, an
//     unknown key, a key bound to another zone: NOTAUTH with the TSIG error BADSIG or BADKEY,
//     which the solver reports as "bad authentication"; a name outside the binding's policy:
//     REFUSED; outside the zone: NOTZONE; nothing is written for any of them.
func TestDynamicUpdates_CertManagerSolverOnTheEmbeddedServer(t *testing.T) {
	bin := solver(t)
	ns := namespace(t, "dynupdate")
	z := zoneObj(ns, "zone", "dyn.test", func(z *dnsv1.DNSZone) {
		z.Spec.DynamicUpdates = []dnsv1.DynamicUpdate{{KeySecretRef: dnsv1.SecretReference{Name: "acme-key"}},
			{KeySecretRef: dnsv1.SecretReference{Name: "md5-key"}}}
	})
	other := zoneObj(ns, "other", "other.test", func(z *dnsv1.DNSZone) {
		z.Spec.DynamicUpdates = []dnsv1.DynamicUpdate{{KeySecretRef: dnsv1.SecretReference{Name: "other-key"}}}
	})
	create(t, tsigSecret(ns, "acme-key", "acme-key", "hmac-sha256", acmeSecret),
		tsigSecret(ns, "md5-key", "md5-key.", "hmac-md5", acmeSecret),
		tsigSecret(ns, "other-key", "other-key", "hmac-sha256", wrongSecret), z, other)
	waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	waitCondition(t, z, dnsv1.ConditionDynamicUpdatesReady, metav1.ConditionTrue, dnsv1.ReasonKeysResolved)
	waitCondition(t, other, dnsv1.ConditionDynamicUpdatesReady, metav1.ConditionTrue, dnsv1.ReasonKeysResolved)

	const fqdn = "_acme-challenge.dyn.test."
	ch := rfc2136solver.Challenge{Nameserver: dnsAddr, Zone: "dyn.test.", FQDN: fqdn, Value: "apex-token",
		KeyName: "acme-key", Algorithm: "HMACSHA256", Secret: acmeSecret}
	ctx := ctxT(t)
	present(t, bin, ch, "on the embedded provider (the solver's process start included)")
	// NOERROR came after the provider's write: the record is served now, no waiting.
	if got, err := txtAt(dnsAddr, fqdn); err != nil || !slices.Equal(got, []string{"apex-token"}) {
		t.Fatalf("right after Present's NOERROR the server answers %q, %v; want [apex-token]", got, err)
	}
	wild := ch
	wild.Value, wild.Network = "wildcard-token", "tcp"
	if err := rfc2136solver.Present(ctx, bin, wild); err != nil {
		t.Fatal(err)
	}
	waitTXT(t, dnsAddr, fqdn, "apex-token", "wildcard-token")
	md5 := ch
	md5.KeyName, md5.Algorithm, md5.FQDN, md5.Value = "md5-key", "HMACMD5", "_acme-challenge.www.dyn.test.", "md5-token"
	if err := rfc2136solver.Present(ctx, bin, md5); err != nil {
		t.Fatal(err)
	}
	waitTXT(t, dnsAddr, md5.FQDN, "md5-token")
	if eps := dynamicUpdateEndpoints(t, ns); len(eps) != 2 {
		t.Fatalf("%d dynamic-update DNSEndpoints, want 2 (one per key and name)", len(eps))
	}

	// Another tenant binds a key of the same name, with its own secret, to its own zone: it
	// writes there, and its key is no key for dyn.test (below).
	tenant := namespace(t, "dynupdate-tenant")
	tz := zoneObj(tenant, "zone", "tenant.test", func(z *dnsv1.DNSZone) {
		z.Spec.DynamicUpdates = []dnsv1.DynamicUpdate{{KeySecretRef: dnsv1.SecretReference{Name: "acme-key"}}}
	})
	create(t, tsigSecret(tenant, "acme-key", "acme-key", "hmac-sha256", wrongSecret), tz)
	waitCondition(t, tz, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	waitCondition(t, tz, dnsv1.ConditionDynamicUpdatesReady, metav1.ConditionTrue, dnsv1.ReasonKeysResolved)
	tch := ch
	tch.Zone, tch.FQDN, tch.Secret, tch.Value = "tenant.test.", "_acme-challenge.tenant.test.", wrongSecret, "tenant-token"
	if err := rfc2136solver.Present(ctx, bin, tch); err != nil {
		t.Fatal(err)
	}
	waitTXT(t, dnsAddr, tch.FQDN, "tenant-token")

	refused := []struct {
		name  string
		mod   func(*rfc2136solver.Challenge)
		rcode string
	}{
		// A TSIG failure is NOTAUTH with a TSIG RR of error BADSIG or BADKEY (RFC 8945 §5.2),
		// which miekg/dns's client reports as "bad authentication".
		{"another tenant's key of the same name", func(c *rfc2136solver.Challenge) { c.Secret = wrongSecret }, badAuth},
		{"another secret", func(c *rfc2136solver.Challenge) { c.Secret = "c29tZS1vdGhlci1zZWNyZXQtbm9ib2R5LWJpbmRz" }, badAuth},
		{"an unknown key", func(c *rfc2136solver.Challenge) { c.KeyName = "nobody" }, badAuth},
		{"a key bound to another zone", func(c *rfc2136solver.Challenge) { c.KeyName, c.Secret = "other-key", wrongSecret }, badAuth},
		{"a name outside the policy", func(c *rfc2136solver.Challenge) { c.FQDN = "www.dyn.test." }, "REFUSED"},
		{"a name outside the zone", func(c *rfc2136solver.Challenge) { c.FQDN = "_acme-challenge.other.test." }, "NOTZONE"},
	}
	for _, tc := range refused {
		c := ch
		c.Value = "refused-token"
		tc.mod(&c)
		expectRcode(t, rfc2136solver.Present(ctx, bin, c), tc.rcode)
	}
	waitTXT(t, dnsAddr, fqdn, "apex-token", "wildcard-token")
	if got, _ := txtAt(dnsAddr, "www.dyn.test"); len(got) != 0 {
		t.Fatalf("a refused UPDATE was written: www.dyn.test TXT %q", got)
	}

	if err := rfc2136solver.CleanUp(ctx, bin, ch); err != nil {
		t.Fatal(err)
	}
	if got, err := txtAt(dnsAddr, fqdn); err != nil || !slices.Equal(got, []string{"wildcard-token"}) {
		t.Fatalf("right after CleanUp's NOERROR the server answers %q, %v; want [wildcard-token]", got, err)
	}
	if err := rfc2136solver.CleanUp(ctx, bin, wild); err != nil {
		t.Fatal(err)
	}
	if got, err := txtAt(dnsAddr, fqdn); err != nil || len(got) != 0 {
		t.Fatalf("after the last CleanUp the server answers %q, %v; want no TXT", got, err)
	}
	if err := rfc2136solver.CleanUp(ctx, bin, md5); err != nil {
		t.Fatal(err)
	}
	if eps := dynamicUpdateEndpoints(t, ns); len(eps) != 0 {
		t.Fatalf("%d dynamic-update DNSEndpoints left after every CleanUp", len(eps))
	}
}

// TestDynamicUpdates_KeySecretProblemsAreConditions: a keySecretRef naming no Secret is
// DynamicUpdatesReady=False KeySecretNotFound; a Secret of another type, or with a secret that
// is not base64, InvalidKeySecret; the message names the Secret, never its secret.
func TestDynamicUpdates_KeySecretProblemsAreConditions(t *testing.T) {
	ns := namespace(t, "dynupdate-bad")
	missing := zoneObj(ns, "missing", "missing.keys-bad.test", func(z *dnsv1.DNSZone) {
		z.Spec.DynamicUpdates = []dnsv1.DynamicUpdate{{KeySecretRef: dnsv1.SecretReference{Name: "absent"}}}
	})
	wrongType := zoneObj(ns, "wrong-type", "wrongtype.keys-bad.test", func(z *dnsv1.DNSZone) {
		z.Spec.DynamicUpdates = []dnsv1.DynamicUpdate{{KeySecretRef: dnsv1.SecretReference{Name: "opaque"}}}
	})
	notBase64 := zoneObj(ns, "not-base64", "notbase64.keys-bad.test", func(z *dnsv1.DNSZone) {
		z.Spec.DynamicUpdates = []dnsv1.DynamicUpdate{{KeySecretRef: dnsv1.SecretReference{Name: "garbled"}}}
	})
	opaque := tsigSecret(ns, "opaque", "k", "hmac-sha256", acmeSecret)
	opaque.Type = corev1.SecretTypeOpaque
	create(t, opaque, tsigSecret(ns, "garbled", "k", "hmac-sha256", "not base64 at all!"), missing, wrongType, notBase64)
	c := waitCondition(t, missing, dnsv1.ConditionDynamicUpdatesReady, metav1.ConditionFalse, dnsv1.ReasonKeySecretNotFound)
	if !strings.Contains(c.Message, "absent") {
		t.Errorf("KeySecretNotFound message %q does not name the Secret", c.Message)
	}
	waitCondition(t, wrongType, dnsv1.ConditionDynamicUpdatesReady, metav1.ConditionFalse, dnsv1.ReasonInvalidKeySecret)
	c = waitCondition(t, notBase64, dnsv1.ConditionDynamicUpdatesReady, metav1.ConditionFalse, dnsv1.ReasonInvalidKeySecret)
	if !strings.Contains(c.Message, "garbled") || strings.Contains(c.Message, "not base64 at all") {
		t.Errorf("InvalidKeySecret message %q: want the Secret's name and never its secret", c.Message)
	}
}

// TestDynamicUpdates_CertManagerSolverOnPowerDNS is the same Present and CleanUp on a zone
// whose provider is PowerDNS: the UPDATE goes to dnsplane's embedded server, and the record
// reaches PowerDNS (its API and its DNS answer) before NOERROR.
func TestDynamicUpdates_CertManagerSolverOnPowerDNS(t *testing.T) {
	bin := solver(t)
	ns := "dynupdate-pdns"
	srv := pdnsNamespace(t, ns, "PDNS_NAMESERVERS", "ns1.pdns-dyn.test")
	z := zoneObj(ns, "zone", "pdns-dyn.test", func(z *dnsv1.DNSZone) {
		z.Spec.DynamicUpdates = []dnsv1.DynamicUpdate{{KeySecretRef: dnsv1.SecretReference{Name: "acme-key"}}}
	})
	create(t, tsigSecret(ns, "acme-key", "pdns-acme", "hmac-sha512", acmeSecret), z)
	waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	waitCondition(t, z, dnsv1.ConditionDynamicUpdatesReady, metav1.ConditionTrue, dnsv1.ReasonKeysResolved)

	const fqdn = "_acme-challenge.pdns-dyn.test."
	ch := rfc2136solver.Challenge{Nameserver: dnsAddr, Zone: "pdns-dyn.test.", FQDN: fqdn, Value: "pdns-token",
		KeyName: "pdns-acme", Algorithm: "HMACSHA512", Secret: acmeSecret}
	ctx := ctxT(t)
	present(t, bin, ch, "on PowerDNS")
	if got := pdnsSets(t, srv, "pdns-dyn.test")[strings.TrimSuffix(fqdn, ".")+"/TXT"]; !slices.Equal(got, []string{"pdns-token"}) {
		t.Fatalf("right after Present's NOERROR PowerDNS holds %q; want [pdns-token] (sets: %v)", got, pdnsSets(t, srv, "pdns-dyn.test"))
	}
	waitTXT(t, srv.DNSAddr, fqdn, "pdns-token")
	if err := rfc2136solver.CleanUp(ctx, bin, ch); err != nil {
		t.Fatal(err)
	}
	if got, ok := pdnsSets(t, srv, "pdns-dyn.test")[strings.TrimSuffix(fqdn, ".")+"/TXT"]; ok {
		t.Fatalf("after CleanUp's NOERROR PowerDNS still holds %q", got)
	}
}

// signedUpdate sends one UPDATE of zone, signed with an HMAC-SHA256 key, built by build, over
// UDP, and returns the answer's rcode.
func signedUpdate(t *testing.T, zone, keyName, secret string, build func(m *dns.Msg)) int {
	t.Helper()
	m := new(dns.Msg)
	m.SetUpdate(dns.Fqdn(zone))
	build(m)
	m.SetTsig(dns.Fqdn(keyName), dns.HmacSHA256, 300, time.Now().Unix())
	c := &dns.Client{Timeout: 10 * time.Second, TsigSecret: map[string]string{dns.Fqdn(keyName): secret}}
	r, _, err := c.Exchange(m, dnsAddr)
	if err != nil {
		t.Fatalf("UPDATE: %v", err)
	}
	return r.Rcode
}

// TestDynamicUpdates_RateLimitPrerequisitesMetricsEventsExpiry pins the limits and signals of
// dynamic updates through the manager:
//   - prerequisites (RFC 2136 §2.4) are checked against the records written through UPDATE:
//     "RRset does not exist" on a written TXT is YXRRSET, "name is in use" on a fresh name
//     NXDOMAIN; an UPDATE with a true prerequisite is written;
//   - a written DNSEndpoint expires --dynamic-update-ttl (1 h) after the UPDATE: its
//     annotation says when; the expiry controller deletes one whose time has passed, and the
//     record with it;
//   - a key sending far more than its burst (20) at once gets REFUSED past it (200 UPDATEs
//     would need 36 s at the 5 per second it refills);
//   - dnsplane_dynamic_updates_total counts per key and rcode, and the DNSZone has Events per
//     key: DynamicUpdate for the written UPDATE, DynamicUpdateRefused for the rate limit.
func TestDynamicUpdates_RateLimitPrerequisitesMetricsEventsExpiry(t *testing.T) {
	ns := namespace(t, "dynupdate-limits")
	z := zoneObj(ns, "zone", "limits.test", func(z *dnsv1.DNSZone) {
		z.Spec.DynamicUpdates = []dnsv1.DynamicUpdate{{KeySecretRef: dnsv1.SecretReference{Name: "limited"}}}
	})
	create(t, tsigSecret(ns, "limited", "limited", "hmac-sha256", acmeSecret), z)
	waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	waitCondition(t, z, dnsv1.ConditionDynamicUpdatesReady, metav1.ConditionTrue, dnsv1.ReasonKeysResolved)
	txt := func(s string) []dns.RR {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatal(err)
		}
		return []dns.RR{rr}
	}
	const name = "_acme-challenge.limits.test."
	before := time.Now()
	if rc := signedUpdate(t, "limits.test", "limited", acmeSecret, func(m *dns.Msg) {
		m.RRsetNotUsed(txt(name + ` 0 IN TXT ""`))
		m.Insert(txt(name + ` 60 IN TXT "first"`))
	}); rc != dns.RcodeSuccess {
		t.Fatalf("an UPDATE whose prerequisite holds: %s", dns.RcodeToString[rc])
	}
	waitTXT(t, dnsAddr, name, "first")
	for what, tc := range map[string]struct {
		build func(m *dns.Msg)
		want  int
	}{
		"RRset does not exist, on a written TXT": {func(m *dns.Msg) {
			m.RRsetNotUsed(txt(name + ` 0 IN TXT ""`))
			m.Insert(txt(name + ` 60 IN TXT "second"`))
		}, dns.RcodeYXRrset},
		"name is in use, on a fresh name": {func(m *dns.Msg) {
			m.NameUsed(txt(`_acme-challenge.www.limits.test. 0 IN TXT ""`))
			m.Insert(txt(`_acme-challenge.www.limits.test. 60 IN TXT "x"`))
		}, dns.RcodeNameError},
	} {
		if rc := signedUpdate(t, "limits.test", "limited", acmeSecret, tc.build); rc != tc.want {
			t.Errorf("%s: %s, want %s", what, dns.RcodeToString[rc], dns.RcodeToString[tc.want])
		}
	}
	waitTXT(t, dnsAddr, name, "first")

	eps := dynamicUpdateEndpoints(t, ns)
	if len(eps) != 1 {
		t.Fatalf("%d dynamic-update DNSEndpoints, want 1", len(eps))
	}
	ep := &eps[0]
	at, err := time.Parse(time.RFC3339, ep.Annotations[dnsv1.AnnotationDynamicUpdateExpires])
	if err != nil || at.Before(before.Add(time.Hour).Add(-time.Second)) || at.After(time.Now().Add(time.Hour)) {
		t.Fatalf("expires %q (%v), want an hour after the UPDATE", ep.Annotations[dnsv1.AnnotationDynamicUpdateExpires], err)
	}
	if ep.Labels[dnsv1.LabelDynamicUpdateZone] != "zone" || ep.Labels[dnsv1.LabelDynamicUpdateKey] != "limited" {
		t.Fatalf("labels %v", ep.Labels)
	}

	// The limit: a burst of 20, then REFUSED; none of these writes anything (deleting a value
	// that is not there).
	counts := map[int]int{}
	for range 200 {
		counts[signedUpdate(t, "limits.test", "limited", acmeSecret, func(m *dns.Msg) { m.Remove(txt(name + ` 0 IN TXT "absent"`)) })]++
	}
	if counts[dns.RcodeRefused] == 0 || counts[dns.RcodeSuccess] == 0 || counts[dns.RcodeSuccess]+counts[dns.RcodeRefused] != 200 {
		t.Fatalf("200 UPDATEs at once: %v, want NOERROR up to the burst and REFUSED past it", counts)
	}
	labels := map[string]string{"namespace": ns, "key": "limited"}
	for rcode, want := range map[string]int{"REFUSED": counts[dns.RcodeRefused], "YXRRSET": 1, "NXDOMAIN": 1} {
		labels["rcode"] = rcode
		if got := metrictest.Value(t, metricsReg, "dnsplane_dynamic_updates_total", labels); int(got) != want {
			t.Errorf("dnsplane_dynamic_updates_total%v = %v, want %d", labels, got, want)
		}
	}
	eventually(t, 30*time.Second, "the DNSZone's Events per key", func() error {
		reasons := map[string]bool{}
		for _, e := range eventsOf(t, ns, "zone") {
			if strings.Contains(e.Message, "limited") {
				reasons[e.Reason] = true
			}
		}
		if !reasons["DynamicUpdate"] || !reasons["DynamicUpdateRefused"] {
			return fmt.Errorf("Events naming the key: %v", reasons)
		}
		return nil
	})

	// Expiry: the time passed (set here, as the clock would), the DNSEndpoint and its record go.
	updateIn(t, k8s, ep, func() {
		ep.Annotations[dnsv1.AnnotationDynamicUpdateExpires] = time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	})
	waitGone(t, ep)
	waitTXT(t, dnsAddr, name)
}

// TestDynamicUpdates_LegoIssuesACertificateFromPebble: a certificate issued end to end:
// Pebble (hack/acme-e2e, v2.10.3) as the ACME server, validating DNS-01 through the zone's own
// authoritative server; lego v5.6.0 as the client with its RFC 2136 provider, sending its
// UPDATEs to dnsplane's embedded server. A certificate for a zone's apex and its wildcard is
// issued on the embedded provider and on PowerDNS, and its SANs are exactly the names asked.
// The challenge records are gone afterwards (lego's CleanUp).
func TestDynamicUpdates_LegoIssuesACertificateFromPebble(t *testing.T) {
	tools, err := acmetest.Build(context.Background(), "..")
	if err != nil {
		t.Fatal(err)
	}
	const secret = "bGVnby1hbmQtcGViYmxlLWVuZC10by1lbmQtc2VjcmV0"
	cases := []struct {
		name, ns, zone string
		// server is the zone's authoritative server, where Pebble validates and lego checks.
		server func(t *testing.T, ns string) string
		// legoZone is DNSUPDATE_ZONES, "" = lego finds the zone by asking the UPDATE server for
		// its SOA, which dnsplane's server answers for every zone with dynamic updates.
		legoZone string
	}{
		{"embedded", "dynupdate-lego", "lego.test", func(t *testing.T, ns string) string { namespace(t, ns); return dnsAddr }, ""},
		{"PowerDNS", "dynupdate-lego-pdns", "lego-pdns.test", func(t *testing.T, ns string) string {
			return pdnsNamespace(t, ns, "PDNS_NAMESERVERS", "ns1.lego-pdns.test").DNSAddr
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			server := tc.server(t, tc.ns)
			z := zoneObj(tc.ns, "zone", tc.zone, func(z *dnsv1.DNSZone) {
				z.Spec.DynamicUpdates = []dnsv1.DynamicUpdate{{KeySecretRef: dnsv1.SecretReference{Name: "lego-key"}}}
			})
			create(t, tsigSecret(tc.ns, "lego-key", "lego-key", "hmac-sha256", secret), z)
			waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
			waitCondition(t, z, dnsv1.ConditionDynamicUpdatesReady, metav1.ConditionTrue, dnsv1.ReasonKeysResolved)
			pebble := acmetest.StartPebble(t, tools, server)
			want := []string{tc.zone, "*." + tc.zone}
			start := time.Now()
			sans, err := acmetest.Issue(ctxT(t), tools, pebble, acmetest.Order{Nameserver: dnsAddr, Resolver: server,
				KeyName: "lego-key.", Algorithm: "hmac-sha256.", Secret: secret, Zone: tc.legoZone, Domains: want})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: certificate for %v issued in %s", tc.name, want, time.Since(start).Round(time.Millisecond))
			slices.Sort(sans)
			slices.Sort(want)
			if !slices.Equal(sans, want) {
				t.Fatalf("the certificate's SANs are %q, want %q", sans, want)
			}
			waitTXT(t, server, "_acme-challenge."+tc.zone)
			eventually(t, 30*time.Second, "no dynamic-update DNSEndpoint left", func() error {
				if eps := dynamicUpdateEndpoints(t, tc.ns); len(eps) != 0 {
					return fmt.Errorf("%d left", len(eps))
				}
				return nil
			})
		})
	}
}

// TestDynamicUpdates_GslbZoneAnsweredByEveryCluster: a Gslb zone's UPDATE relayed on envtest: two
// clusters (eu, us), each with its own API server, manager and embedded server, and its copy of
// the Gslb zone gslb.test bound to the same key. cert-manager's solver sends its Present to eu
// only: eu writes it, relays it to us (TCP, re-signed, marked so us does not relay it back), and
// answers NOERROR once us took it too, so both clusters' servers answer the challenge at once.
// CleanUp through eu removes it from both.
func TestDynamicUpdates_GslbZoneAnsweredByEveryCluster(t *testing.T) {
	bin := solver(t)
	port := strconv.Itoa(ports.TCPUDP(t, "127.0.0.13", "127.0.0.14"))
	euAddr, usAddr := "127.0.0.13:"+port, "127.0.0.14:"+port
	eu := startGslbCluster(t, "eu", euAddr, "192.0.2.1", []gslb.Peer{{GeoTag: "us", Addr: usAddr}})
	us := startGslbCluster(t, "us", usAddr, "192.0.2.2", []gslb.Peer{{GeoTag: "eu", Addr: euAddr}})
	const secret = "Z3NsYi16b25lLWtleS1zaGFyZWQtYnktZXZlcnktY2x1c3Rlcg=="
	for _, g := range []*gslbCluster{eu, us} {
		g.create(tsigSecret("apps", "acme-key", "gslb-acme", "hmac-sha256", secret),
			&dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"}, Spec: dnsv1.GslbSpec{
				ResourceRef: dnsv1.ResourceReference{Kind: "Service", Name: "app"}, Hosts: []string{"app.gslb.test"},
				ZoneRef: dnsv1.ZoneReference{Name: "gslb"}, Strategy: dnsv1.GslbStrategy{Type: "roundRobin", DNSTTLSeconds: 5}}})
		z := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "gslb"}}
		updateIn(t, g.client, z, func() {
			z.Spec.DynamicUpdates = []dnsv1.DynamicUpdate{{KeySecretRef: dnsv1.SecretReference{Name: "acme-key"}}}
		})
		g.waitCondition(z, dnsv1.ConditionDynamicUpdatesReady, metav1.ConditionTrue, dnsv1.ReasonKeysResolved, 30*time.Second)
	}
	ch := rfc2136solver.Challenge{Nameserver: euAddr, Zone: "gslb.test.", FQDN: "_acme-challenge.app.gslb.test.", Value: "gslb-token",
		KeyName: "gslb-acme", Algorithm: "HMACSHA256", Secret: secret}
	ctx := ctxT(t)
	present(t, bin, ch, "in a Gslb zone, written in both clusters")
	for _, addr := range []string{euAddr, usAddr} {
		// NOERROR came after both clusters wrote it: each answers now, no waiting.
		if got, err := txtAt(addr, ch.FQDN); err != nil || !slices.Equal(got, []string{"gslb-token"}) {
			t.Fatalf("right after Present's NOERROR %s answers %q, %v; want [gslb-token]", addr, got, err)
		}
	}
	if err := rfc2136solver.CleanUp(ctx, bin, ch); err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{euAddr, usAddr} {
		if got, err := txtAt(addr, ch.FQDN); err != nil || len(got) != 0 {
			t.Fatalf("after CleanUp's NOERROR %s answers %q, %v; want no TXT", addr, got, err)
		}
	}
}

// TestDynamicUpdates_GslbRelayWithAPeerDownOrWithoutTheKey pins the relay's answers when not
// every peer takes the UPDATE: eu's peers are one that is down and us, which does not bind the
// key yet. us refuses (NOTAUTH): the UPDATE is SERVFAIL, the record written in eu all the same
// (a retry finds it). Once us binds the key, the retry reaches us, which serves the record, and
// is still SERVFAIL: the peer that is down did not take it (tried again, then named in a
// PeerNotUpdated Event on eu's DNSZone), and NOERROR means every peer did.
func TestDynamicUpdates_GslbRelayWithAPeerDownOrWithoutTheKey(t *testing.T) {
	bin := solver(t)
	port := strconv.Itoa(ports.TCPUDP(t, "127.0.0.15", "127.0.0.16"))
	euAddr, usAddr, dead := "127.0.0.15:"+port, "127.0.0.16:"+port, ports.Dead(t)
	eu := startGslbCluster(t, "eu", euAddr, "192.0.2.1", []gslb.Peer{{GeoTag: "down", Addr: dead}, {GeoTag: "us", Addr: usAddr}})
	us := startGslbCluster(t, "us", usAddr, "192.0.2.2", []gslb.Peer{{GeoTag: "eu", Addr: euAddr}})
	const secret = "Z3NsYi1yZWxheS1wYXJ0aWFsLXBlZXJzLWtleS1zZWNyZXQ="
	bind := func(g *gslbCluster) {
		z := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "gslb"}}
		updateIn(t, g.client, z, func() {
			z.Spec.DynamicUpdates = []dnsv1.DynamicUpdate{{KeySecretRef: dnsv1.SecretReference{Name: "acme-key"}}}
		})
		g.waitCondition(z, dnsv1.ConditionDynamicUpdatesReady, metav1.ConditionTrue, dnsv1.ReasonKeysResolved, 30*time.Second)
	}
	for _, g := range []*gslbCluster{eu, us} {
		g.create(tsigSecret("apps", "acme-key", "gslb-acme", "hmac-sha256", secret),
			&dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"}, Spec: dnsv1.GslbSpec{
				ResourceRef: dnsv1.ResourceReference{Kind: "Service", Name: "app"}, Hosts: []string{"app.gslb.test"},
				ZoneRef: dnsv1.ZoneReference{Name: "gslb"}, Strategy: dnsv1.GslbStrategy{Type: "roundRobin", DNSTTLSeconds: 5}}})
	}
	bind(eu)
	ch := rfc2136solver.Challenge{Nameserver: euAddr, Zone: "gslb.test.", FQDN: "_acme-challenge.gslb.test.", Value: "relay-token",
		KeyName: "gslb-acme", Algorithm: "HMACSHA256", Secret: secret, Network: "tcp"}
	ctx := ctxT(t)
	expectRcode(t, rfc2136solver.Present(ctx, bin, ch), "SERVFAIL")
	waitTXT(t, euAddr, ch.FQDN, "relay-token")
	bind(us)
	expectRcode(t, rfc2136solver.Present(ctx, bin, ch), "SERVFAIL")
	for _, addr := range []string{euAddr, usAddr} {
		if got, err := txtAt(addr, ch.FQDN); err != nil || !slices.Equal(got, []string{"relay-token"}) {
			t.Fatalf("after the retry's answer %s answers %q, %v; want [relay-token]", addr, got, err)
		}
	}
	eventually(t, 30*time.Second, "a PeerNotUpdated Event naming the peer that is down", func() error {
		var list corev1.EventList
		if err := eu.client.List(ctx, &list, client.InNamespace("apps")); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == "gslb" && e.Reason == "PeerNotUpdated" && strings.Contains(e.Message, dead) {
				return nil
			}
		}
		return fmt.Errorf("none among %d Events", len(list.Items))
	})
}
