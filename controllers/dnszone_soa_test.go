package controllers_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	"github.com/dnsplane/dnsplane/internal/testing/metrictest"
	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
)

// soaCosts is what the zones under test cost over a window: DNSZone reconciles
// (controller_runtime_reconcile_total of the cluster's DNSZone controller) and provider requests
// (the cluster's dnsplane_provider_requests_total).
type soaCosts struct{ reconciles, requests float64 }

func (c *cluster) soaCosts(t *testing.T, controller string) soaCosts {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c.requests)
	return soaCosts{
		reconciles: metrictest.Value(t, ctrlmetrics.Registry, "controller_runtime_reconcile_total", map[string]string{"controller": controller}),
		requests:   metrictest.Value(t, reg, "dnsplane_provider_requests_total", nil),
	}
}

// TestDNSZone_FailingSOACheckCostsOneReconcilePerPoll: DNSZones on a real
// PowerDNS whose DNS_ADDRESS is a dead port, a silent server or a REFUSED server, and two
// child zones linked under the dead one, with --soa-poll-interval=5s. Over 60 s each zone costs
// at most one reconcile and one provider request per poll interval (plus one of slack), no
// status write (resourceVersion unchanged), and its condition message is the same poll after
// poll (no ports, no timestamps).
func TestDNSZone_FailingSOACheckCostsOneReconcilePerPoll(t *testing.T) {
	const (
		poll       = 5 * time.Second
		window     = 60 * time.Second
		controller = "dnszone-soa"
	)
	srv := pdnstest.Start(t)
	c := startClusterWith(t, "soa-cluster", time.Hour, 5*time.Hour, clusterOptions{SOAPollInterval: poll, ZoneController: controller, DNSAddr: "127.0.0.1:0"})
	silent := dnstest.Handle(t, func(dns.ResponseWriter, *dns.Msg) {})
	refused := dnstest.Handle(t, func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetRcode(r, dns.RcodeRefused)
		_ = w.WriteMsg(m)
	})
	ns := "soa"
	c.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	secret := func(name, dnsAddr string) client.Object {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: "dnsplane.io/pdns",
			StringData: map[string]string{"PDNS_API_URL": srv.APIURL, "PDNS_API_KEY": srv.Key, "DNS_ADDRESS": dnsAddr}}
	}
	c.create(secret("dead", ports.Dead(t)), secret("silent", silent), secret("refused", refused), secret("good", srv.DNSAddr))
	zone := func(name, zone, secret string, link bool) *dnsv1.DNSZone {
		return zoneObj(ns, name, zone, func(z *dnsv1.DNSZone) {
			z.Spec.ProviderRef.Name = secret
			z.Spec.LinkToParentDomain = link
		})
	}
	failing := []*dnsv1.DNSZone{zone("dead", "dead.test", "dead", false), zone("silent", "silent.test", "silent", false), zone("refused", "refused.test", "refused", false)}
	children := []*dnsv1.DNSZone{zone("child1", "c1.dead.test", "good", true), zone("child2", "c2.dead.test", "good", true)}
	all := append(append([]*dnsv1.DNSZone{}, failing...), children...)
	for _, z := range all {
		c.create(z)
	}
	// The children's in-zone name servers get addresses, so their delegations are not lame:
	// they wait for their dead parent only.
	for _, z := range children {
		ep := endpointObj(ns, "ns1-"+z.Name, dnsv1.Endpoint{DNSName: "ns1." + z.Spec.Zone, RecordType: "A", Targets: dnsv1.Targets{"192.0.2.53"}})
		c.create(ep)
		c.waitCondition(ep, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, 60*time.Second)
	}
	for _, z := range failing {
		c.waitCondition(z, dnsv1.ConditionZoneAvailable, metav1.ConditionFalse, dnsv1.ReasonAwaitingSOA, 60*time.Second)
	}
	for _, z := range children {
		c.waitCondition(z, dnsv1.ConditionParentLinkCreated, metav1.ConditionFalse, dnsv1.ReasonAwaitingParent, 60*time.Second)
	}
	// Let the first polls pass, then measure.
	time.Sleep(2 * poll)
	before := map[string]*dnsv1.DNSZone{}
	for _, z := range all {
		got := &dnsv1.DNSZone{}
		if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(z), got); err != nil {
			t.Fatal(err)
		}
		before[z.Name] = got
	}
	from := time.Now()
	start := c.soaCosts(t, controller)
	time.Sleep(window)
	end := c.soaCosts(t, controller)
	// The counts are bounded per poll interval of the window as it passed (a loaded machine
	// oversleeps), not as it was asked for.
	span := time.Since(from)

	perMinute := func(v float64) float64 { return v * float64(time.Minute) / float64(window) }
	reconciles, requests := end.reconciles-start.reconciles, end.requests-start.requests
	t.Logf("over %s with --soa-poll-interval=%s and %d zones: %.0f DNSZone reconciles (%.0f/min), %.0f provider requests (%.0f/min)",
		window, poll, len(all), reconciles, perMinute(reconciles), requests, perMinute(requests))
	bound := float64(len(all)) * (float64(span/poll) + 1)
	if reconciles > bound {
		t.Errorf("%.0f DNSZone reconciles in %s, want at most %.0f (one per zone per poll interval, plus one)", reconciles, span, bound)
	}
	if requests > bound {
		t.Errorf("%.0f provider requests in %s, want at most %.0f (one per zone per poll interval, plus one)", requests, span, bound)
	}
	for _, z := range all {
		got := &dnsv1.DNSZone{}
		if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(z), got); err != nil {
			t.Fatal(err)
		}
		b := before[z.Name]
		if got.ResourceVersion != b.ResourceVersion {
			t.Errorf("%s: resourceVersion %s -> %s during the window: its status is rewritten poll after poll", z.Name, b.ResourceVersion, got.ResourceVersion)
		}
		for _, typ := range []string{dnsv1.ConditionZoneAvailable, dnsv1.ConditionParentLinkCreated} {
			was, now := findCond(b.Status.Conditions, typ), findCond(got.Status.Conditions, typ)
			if was != nil && now != nil && was.Message != now.Message {
				t.Errorf("%s: %s message changed from poll to poll:\n  %s\n  %s", z.Name, typ, was.Message, now.Message)
			}
		}
	}
	for _, z := range all {
		msg := findCond(before[z.Name].Status.Conditions, dnsv1.ConditionZoneAvailable).Message
		if p := localSocket.FindString(msg); p != "" {
			t.Errorf("%s: ZoneAvailable message names a local port (%s): %s", z.Name, p, msg)
		}
	}
}

// localSocket matches a local socket address as Go's net errors print it ("read udp
// 127.0.0.1:40123->127.0.0.1:53"): a port that differs on every query.
var localSocket = regexp.MustCompile(`[0-9.]+:[0-9]+->`)
