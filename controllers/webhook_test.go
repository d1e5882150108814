package controllers_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	srv := pdnstest.Start(t)
	zone := webhooktest.ZoneName("ctrl")
	body := fmt.Sprintf(`{"name":%q,"kind":"Native","nameservers":[%q]}`, zone+".", "ns1."+zone+".")
	if code, resp := srv.API(t, http.MethodPost, "/zones", body); code != http.StatusCreated {
		t.Fatalf("create zone %s at PowerDNS: HTTP %d %s", zone, code, resp)
	}
	url := webhooktest.StartPDNS(t, srv.APIURL, srv.Key)
	ns := "webhook"
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dns"}, Type: "dnsplane.io/webhook",
			StringData: map[string]string{"WEBHOOK_URL": url, "WEBHOOK_HEADERS": "X-Proxy-Token: webhook-header-token-value",
				"DNS_ADDRESS": srv.DNSAddr}})

	created := zoneObj(ns, "created", "new."+zone, nil)
	adopted := zoneObj(ns, "adopted", zone, func(z *dnsv1.DNSZone) { z.Spec.ZoneID = zone })
	ep := endpointObj(ns, "web", dnsv1.Endpoint{DNSName: "web." + zone, RecordType: "A", Targets: dnsv1.Targets{"192.0.2.90"}})
	create(t, created, adopted, ep)
	waitCondition(t, created, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonNotCapable)
	waitCondition(t, adopted, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)
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
	for _, o := range []*dnsv1.DNSZone{adopted, created} {
		if err := k8s.Delete(ctxT(t), o); err != nil {
			t.Fatal(err)
		}
		waitGone(t, o)
	}
	if r := ask(zone, dns.TypeSOA); !r.Authoritative || len(r.Answer) != 1 {
		t.Fatalf("deleting the DNSZone removed the adopted zone: %v", r)
	}
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
