package controllers_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
	"github.com/dnsplane/dnsplane/internal/testing/webhooktest"
)

// TestWebhook_AdoptedZoneThroughTheSameControllers: a dnsplane.io/webhook Secret reaches
// external-dns v0.22.0's own webhook server around its PowerDNS provider. A DNSZone without
// zoneID reports NotCapable (webhooks cannot create zones); one adopting a PowerDNS zone by name
// becomes Ready; a DNSEndpoint's record is served by PowerDNS with dnsplane's registry TXT record
// beside it, both written through the webhook; deleting the DNSEndpoint removes both, and
// deleting the DNSZone keeps the adopted zone.
func TestWebhook_AdoptedZoneThroughTheSameControllers(t *testing.T) {
	srv, zone, hook := webhookPDNS(t, "ctrl")
	ns := "webhook"
	webhookNamespace(t, ns, hook.String(), "X-Proxy-Token: webhook-header-token-value", srv.DNSAddr)

	created, adopted, ep := adoptedZoneObjects(t, ns, "new."+zone, zone)
	ask := func(name string, qtype uint16) *dns.Msg {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), qtype)
		r, _, err := (&dns.Client{Net: "tcp", Timeout: 2 * time.Second}).Exchange(m, srv.DNSAddr)
		if err != nil {
			t.Fatalf("query PowerDNS: %v", err)
		}
		return r
	}
	if r := ask("web."+zone, dns.TypeA); !r.Authoritative || len(r.Answer) != 1 {
		t.Fatalf("PowerDNS answer for web.%s: %v", zone, r)
	}
	registry := registryNames(t, srv, zone)
	if len(registry) != 1 {
		t.Fatalf("registry TXT records at PowerDNS: %q, want one for web.%s", registry, zone)
	}
	if r := ask(registry[0], dns.TypeTXT); len(r.Answer) != 1 || !strings.Contains(r.Answer[0].String(), "heritage=dnsplane") {
		t.Fatalf("PowerDNS answer for the registry record %s: %v", registry[0], r)
	}

	if err := k8s.Delete(ctxT(t), ep); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ep)
	eventually(t, 10*time.Second, "record and registry record removed from PowerDNS", func() error {
		if r := ask("web."+zone, dns.TypeA); len(r.Answer) != 0 {
			return fmt.Errorf("still answered: %v", r.Answer)
		}
		if left := registryNames(t, srv, zone); len(left) != 0 {
			return fmt.Errorf("registry records left: %q", left)
		}
		return nil
	})
	deleteKeepsAdopted(t, ask, zone, adopted, created)
}

// registryNames returns the names of the TXT rrsets of zone at PowerDNS whose content is a
// dnsplane registry value.
func registryNames(t *testing.T, srv pdnstest.Server, zone string) []string {
	t.Helper()
	code, resp := srv.API(t, http.MethodGet, "/zones/"+zone+".", "")
	if code != http.StatusOK {
		t.Fatalf("read zone %s at PowerDNS: HTTP %d %s", zone, code, resp)
	}
	var z struct {
		RRSets []struct {
			Name, Type string
			Records    []struct{ Content string }
		}
	}
	if err := json.Unmarshal([]byte(resp), &z); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, rs := range z.RRSets {
		if rs.Type == "TXT" && len(rs.Records) > 0 && strings.Contains(rs.Records[0].Content, "heritage=dnsplane") {
			out = append(out, rs.Name)
		}
	}
	return out
}

// TestWebhook_ConditionsNameTheWebhooksErrorNeverItsHeaders: a webhook that refuses a write
// (HTTP 400 with its own error text, which echoes the Authorization header it was sent) leaves
// the DNSEndpoint Ready=False, ProviderError, with the webhook's text in the message; the
// header's value is in no condition and no Event. Once the webhook accepts, a new generation is
// published.
func TestWebhook_ConditionsNameTheWebhooksErrorNeverItsHeaders(t *testing.T) {
	const token = "Bearer webhook-cond-token-4711"
	srv, zone, upstream := webhookPDNS(t, "cond")
	var refuse atomic.Bool
	refuse.Store(true)
	front := webhookFront(t, upstream, func(w http.ResponseWriter, r *http.Request) bool {
		if refuse.Load() && r.Method == http.MethodPost && r.URL.Path == "/records" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":"TTL 42 is below this DNS service's minimum of 60 (request authorised by %s)"}`, r.Header.Get("Authorization"))
			return true
		}
		return false
	})

	ns := "webhook-cond"
	webhookNamespace(t, ns, front.URL, "Authorization: "+token, srv.DNSAddr)
	adopted := zoneObj(ns, "zone", zone, func(z *dnsv1.DNSZone) { z.Spec.ZoneID = zone })
	ep := endpointObj(ns, "web", dnsv1.Endpoint{DNSName: "web." + zone, RecordType: "A", RecordTTL: 42, Targets: dnsv1.Targets{"192.0.2.91"}})
	create(t, adopted, ep)
	waitCondition(t, adopted, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	c := waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonProviderError)
	if !strings.Contains(c.Message, "TTL 42 is below this DNS service's minimum of 60") {
		t.Errorf("Ready message %q lacks the webhook's error text", c.Message)
	}
	if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(ep), ep); err != nil {
		t.Fatal(err)
	}
	shown, _ := json.Marshal(ep.Status)
	for _, e := range eventsOf(t, ns, ep.Name) {
		shown = append(shown, e.Message...)
	}
	if strings.Contains(string(shown), "webhook-cond-token-4711") {
		t.Errorf("the header value is shown in the DNSEndpoint's status or Events: %s", shown)
	}

	refuse.Store(false)
	ep.Spec.Endpoints[0].RecordTTL = 60
	if err := k8s.Update(ctxT(t), ep); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)
}

// TestWebhook_ARedirectedWriteIsNotPublished: a webhook address whose POST /records answers with
// a redirect to a login page on another host (an authenticating proxy) leaves the DNSEndpoint
// Ready=False, ProviderError, naming the status: the redirect is not followed (the login host
// gets no request, so no header either) and nothing is taken as written, nor served. Once the
// webhook itself answers, the record is published.
func TestWebhook_ARedirectedWriteIsNotPublished(t *testing.T) {
	srv, zone, upstream := webhookPDNS(t, "redir")
	var logins atomic.Int64
	login := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		logins.Add(1)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html>Sign in</html>")
	}))
	t.Cleanup(login.Close)
	loginURL := strings.Replace(login.URL, "127.0.0.1", "localhost", 1) + "/login"
	var redirect atomic.Bool
	redirect.Store(true)
	front := webhookFront(t, upstream, func(w http.ResponseWriter, r *http.Request) bool {
		if redirect.Load() && r.Method == http.MethodPost && r.URL.Path == "/records" {
			http.Redirect(w, r, loginURL, http.StatusFound)
			return true
		}
		return false
	})

	ns := "webhook-redirect"
	webhookNamespace(t, ns, front.URL, "X-Api-Key: webhook-redirect-key-0815", srv.DNSAddr)
	adopted := zoneObj(ns, "zone", zone, func(z *dnsv1.DNSZone) { z.Spec.ZoneID = zone })
	ep := endpointObj(ns, "web", dnsv1.Endpoint{DNSName: "web." + zone, RecordType: "A", RecordTTL: 60, Targets: dnsv1.Targets{"192.0.2.92"}})
	create(t, adopted, ep)
	waitCondition(t, adopted, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	c := waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonProviderError)
	if !strings.Contains(c.Message, "HTTP 302") || strings.Contains(c.Message, "webhook-redirect-key-0815") {
		t.Errorf("Ready message %q: want the status named, never the header's value", c.Message)
	}
	if n := logins.Load(); n != 0 {
		t.Errorf("the redirect was followed: the login host got %d requests", n)
	}
	code, resp := srv.API(t, http.MethodGet, "/zones/"+zone+".", "")
	if code != http.StatusOK || strings.Contains(resp, "192.0.2.92") {
		t.Errorf("PowerDNS holds the record the webhook never acknowledged: HTTP %d %s", code, resp)
	}

	redirect.Store(false)
	waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)
}

// TestWebhook_ATargetTheWebhookWouldDropIsNotPublished: a webhook whose /adjustendpoints answers
// a two-target set with one of them (it would not hold the other) leaves the DNSEndpoint
// Ready=False naming the changed targets, never Ready with a target no one serves; PowerDNS
// holds nothing of it.
func TestWebhook_ATargetTheWebhookWouldDropIsNotPublished(t *testing.T) {
	srv, zone, upstream := webhookPDNS(t, "dropt")
	front := webhookFront(t, upstream, func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodPost || r.URL.Path != "/adjustendpoints" {
			return false
		}
		var eps []map[string]any
		if err := json.NewDecoder(r.Body).Decode(&eps); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return true
		}
		for _, ep := range eps {
			if ts, ok := ep["targets"].([]any); ok && ep["recordType"] == "A" && len(ts) > 1 {
				ep["targets"] = ts[:1]
			}
		}
		w.Header().Set("Content-Type", "application/external.dns.webhook+json;version=1")
		_ = json.NewEncoder(w).Encode(eps)
		return true
	})

	ns := "webhook-dropt"
	webhookNamespace(t, ns, front.URL, "", srv.DNSAddr)
	adopted := zoneObj(ns, "zone", zone, func(z *dnsv1.DNSZone) { z.Spec.ZoneID = zone })
	ep := endpointObj(ns, "web", dnsv1.Endpoint{DNSName: "web." + zone, RecordType: "A", RecordTTL: 60, Targets: dnsv1.Targets{"192.0.2.93", "192.0.2.94"}})
	create(t, adopted, ep)
	waitCondition(t, adopted, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	c := waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionFalse, "")
	if !strings.Contains(c.Message, "changed the targets") {
		t.Errorf("Ready message %q does not say the webhook would change the targets", c.Message)
	}
	code, resp := srv.API(t, http.MethodGet, "/zones/"+zone+".", "")
	if code != http.StatusOK || strings.Contains(resp, "192.0.2.93") {
		t.Errorf("PowerDNS holds the set the webhook would not hold as given: HTTP %d %s", code, resp)
	}
}

// webhookPDNS starts PowerDNS with the zone webhooktest.ZoneName(label) created in it and
// external-dns's webhook server in front of it, and returns PowerDNS, the zone and the webhook's
// URL.
func webhookPDNS(t *testing.T, label string) (pdnstest.Server, string, *url.URL) {
	t.Helper()
	srv := pdnstest.Start(t)
	zone := webhooktest.ZoneName(label)
	body := fmt.Sprintf(`{"name":%q,"kind":"Native","nameservers":[%q]}`, zone+".", "ns1."+zone+".")
	if code, resp := srv.API(t, http.MethodPost, "/zones", body); code != http.StatusCreated {
		t.Fatalf("create zone %s at PowerDNS: HTTP %d %s", zone, code, resp)
	}
	hook, err := url.Parse(webhooktest.StartPDNS(t, srv.APIURL, srv.Key))
	if err != nil {
		t.Fatal(err)
	}
	return srv, zone, hook
}

// webhookFront serves, until the test ends, a proxy in front of the webhook at upstream:
// intercept answers a request itself when it returns true, and the webhook answers the others.
func webhookFront(t *testing.T, upstream *url.URL, intercept func(http.ResponseWriter, *http.Request) bool) *httptest.Server {
	t.Helper()
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !intercept(w, r) {
			proxy.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(front.Close)
	return front
}

// webhookNamespace creates the namespace ns with its dnsplane.io/webhook Secret "dns": the
// webhook's URL, its headers (none when empty) and the DNS address that serves its zones.
func webhookNamespace(t *testing.T, ns, hookURL, headers, dnsAddr string) {
	t.Helper()
	data := map[string]string{"WEBHOOK_URL": hookURL, "DNS_ADDRESS": dnsAddr}
	if headers != "" {
		data["WEBHOOK_HEADERS"] = headers
	}
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dns"}, Type: "dnsplane.io/webhook", StringData: data})
}
