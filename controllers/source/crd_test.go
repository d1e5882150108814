package source_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/app"
	"github.com/dnsplane/dnsplane/internal/testing/envtest"
	"github.com/dnsplane/dnsplane/internal/testing/metrictest"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/source"
)

var externalDNS = schema.GroupVersionKind{Group: "externaldns.k8s.io", Version: "v1alpha1", Kind: "DNSEndpoint"}

// externalEndpoint returns an external-dns DNSEndpoint ns/name with endpoints.
func externalEndpoint(ns, name string, endpoints ...map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(externalDNS)
	u.SetNamespace(ns)
	u.SetName(name)
	eps := make([]any, len(endpoints))
	for i, e := range endpoints {
		eps[i] = e
	}
	u.Object["spec"] = map[string]any{"endpoints": eps}
	return u
}

// waitObserved waits until the external-dns DNSEndpoint's status.observedGeneration is its
// generation.
func waitObserved(t *testing.T, c client.Client, u *unstructured.Unstructured) {
	t.Helper()
	eventually(t, "status.observedGeneration of "+u.GetName(), func() error {
		if err := c.Get(ctxT(t), client.ObjectKeyFromObject(u), u); err != nil {
			return err
		}
		g, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		if g != u.GetGeneration() {
			return fmt.Errorf("observedGeneration %d, generation %d", g, u.GetGeneration())
		}
		return nil
	})
}

// TestCRD_ExternalDNSEndpointPublishedAndObserved: an externaldns.k8s.io DNSEndpoint is
// published through a dnsplane DNSEndpoint it owns, its status.observedGeneration is written; an
// endpoint with a target of the wrong family or a name that is not a DNS name gives an Event and
// is left out; deleting it removes what it published.
func TestCRD_ExternalDNSEndpointPublishedAndObserved(t *testing.T) {
	const ns, zone = "crd-a", "crd-a.test"
	zoneNamespace(t, k8s, ns, zone)
	u := externalEndpoint(ns, "legacy",
		map[string]any{"dnsName": "legacy." + zone, "recordType": "A", "targets": []any{"192.0.2.50"}, "recordTTL": int64(30)},
		map[string]any{"dnsName": "txt." + zone, "recordType": "TXT", "targets": []any{"hello"}})
	create(t, k8s, u)
	ep := waitEndpoint(t, k8s, ns, "externaldns-legacy", endpointTTL("legacy."+zone, 30))
	if c := ep.OwnerReferences; len(c) != 1 || c[0].Kind != "DNSEndpoint" || c[0].APIVersion != "externaldns.k8s.io/v1alpha1" {
		t.Errorf("owner references %+v", c)
	}
	waitObserved(t, k8s, u)
	waitAnswer(t, "legacy."+zone, dns.TypeA, "192.0.2.50")

	if err := unstructured.SetNestedSlice(u.Object, []any{
		map[string]any{"dnsName": "legacy." + zone, "recordType": "A", "targets": []any{"192.0.2.51"}},
		map[string]any{"dnsName": "v6." + zone, "recordType": "AAAA", "targets": []any{"192.0.2.52"}},
		map[string]any{"dnsName": "bad name." + zone, "recordType": "A", "targets": []any{"192.0.2.53"}},
	}, "spec", "endpoints"); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Update(ctxT(t), u); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, k8s, ns, "DNSEndpoint", "legacy", dnsv1.ReasonInvalidTarget)
	waitEvent(t, k8s, ns, "DNSEndpoint", "legacy", dnsv1.ReasonInvalidHostname)
	waitObserved(t, k8s, u)
	waitAnswer(t, "legacy."+zone, dns.TypeA, "192.0.2.51")
	waitAnswer(t, "txt."+zone, dns.TypeTXT)

	if err := k8s.Delete(ctxT(t), u); err != nil {
		t.Fatal(err)
	}
	waitGone(t, k8s, ns, "externaldns-legacy")
	waitAnswer(t, "legacy."+zone, dns.TypeA)
}

// TestSources_StartOnceTheirCRDIsInstalled: a manager whose gateway-httproute and crd sources
// have no CRD yet starts and runs (dnsplane_source_ready 0 for them, 1 for service); once the
// CRDs are installed, with no restart, both sources start (1) and publish.
func TestSources_StartOnceTheirCRDIsInstalled(t *testing.T) {
	cfg := envtest.Start(t, root) // an API server of its own: without the sources' CRDs
	reg := prometheus.NewRegistry()
	appCtx, cancel := context.WithCancel(context.Background()) // the zone writers' lifetime
	t.Cleanup(cancel)
	a, err := app.New(appCtx, managerConfig(cfg, t.TempDir(), source.Config{Sources: []string{source.Service, source.GatewayHTTPRoute, source.CRD}}, reg))
	if err != nil {
		t.Fatal(err)
	}
	testrun.Background(t, "manager", a.Run)
	c, err := client.New(cfg, client.Options{Scheme: app.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ready := func(want map[string]float64) func() error {
		return func() error {
			for name, v := range want {
				n, err := gaugeValue(reg, name)
				if err != nil || n != v {
					return fmt.Errorf("dnsplane_source_ready{source=%q} = %v (%v), want %v", name, n, err, v)
				}
			}
			return nil
		}
	}
	eventually(t, "sources waiting", ready(map[string]float64{source.Service: 1, source.GatewayHTTPRoute: 0, source.CRD: 0}))
	const ns, zone = "late", "late.test"
	zoneNamespace(t, c, ns, zone)

	envtest.InstallCRDs(t, cfg, envtest.SourceCRDs(t, root))
	eventually(t, "sources started", ready(map[string]float64{source.Service: 1, source.GatewayHTTPRoute: 1, source.CRD: 1}))
	create(t, c, externalEndpoint(ns, "legacy", map[string]any{"dnsName": "legacy." + zone, "recordType": "A", "targets": []any{"192.0.2.60"}}))
	gateway(t, c, ns, "gw", "192.0.2.61", gwv1.Listener{Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 80})
	route := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: gwv1.HTTPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{parentRef("gw")}}, Hostnames: []gwv1.Hostname{gwv1.Hostname("web." + zone)}}}
	create(t, c, route)
	setParents(t, c, route, func(g int64) []gwv1.RouteParentStatus { return accepted("gw", g) })
	waitEndpoint(t, c, ns, "externaldns-legacy", nil)
	waitEndpoint(t, c, ns, "httproute-web", nil)
}

// gaugeValue returns dnsplane_source_ready{source=name} from reg.
func gaugeValue(reg *prometheus.Registry, name string) (float64, error) {
	v, n, err := metrictest.Sum(reg, "dnsplane_source_ready", map[string]string{"source": name})
	if err == nil && n == 0 {
		err = fmt.Errorf("no series")
	}
	return v, err
}
