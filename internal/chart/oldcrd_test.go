package chart

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/app"
	"github.com/dnsplane/dnsplane/internal/testing/conditions"
)

// olderCRDs returns config/crd/bases as an older release's CRDs would be: no schema defaults
// anywhere (every +kubebuilder:default marker is newer than they are), and without fields the
// current code reads or writes: spec.approvedPlan of DNSEndpoint and DNSRecord, status.availableTimestamp
// of DNSZone.
func olderCRDs(t *testing.T) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	drop := map[string][]string{
		"dnsendpoints.dnsplane.io": {"spec", "approvedPlan"},
		"dnsrecords.dnsplane.io":   {"spec", "approvedPlan"},
		"dnszones.dnsplane.io":     {"status", "availableTimestamp"},
	}
	paths, err := filepath.Glob(filepath.Join(repoRoot, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(paths) != 4 {
		t.Fatalf("CRDs %v: %v", paths, err)
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(raw, crd); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for i := range crd.Spec.Versions {
			s := crd.Spec.Versions[i].Schema.OpenAPIV3Schema
			stripDefaults(s)
			if d, ok := drop[crd.Name]; ok {
				parent := s.Properties[d[0]]
				if _, ok := parent.Properties[d[1]]; !ok {
					t.Fatalf("%s has no %v to drop", crd.Name, d)
				}
				delete(parent.Properties, d[1])
				s.Properties[d[0]] = parent
			}
		}
		out = append(out, crd)
	}
	return out
}

// stripDefaults removes every default from s and the schemas below it.
func stripDefaults(s *apiextensionsv1.JSONSchemaProps) {
	s.Default = nil
	for k, p := range s.Properties {
		stripDefaults(&p)
		s.Properties[k] = p
	}
	if s.Items != nil && s.Items.Schema != nil {
		stripDefaults(s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		stripDefaults(s.AdditionalProperties.Schema)
	}
}

// TestOlderCRDsStillReconcile: a manager of this release against an older release's CRDs (no
// schema defaults, fields missing: olderCRDs) reconciles every kind to Ready and serves what they
// publish. Fields the older schema lacks are pruned by the API server and tolerated; defaults the
// schema no longer supplies are applied in code (a Gslb without spec.strategy is roundRobin with a
// 30 s TTL; a DNSEndpoint or DNSRecord without spec.strategy is FullSync). This is the state between
// `helm upgrade` of the manager and of the CRDs (docs/install.md, "Upgrade").
func TestOlderCRDsStillReconcile(t *testing.T) {
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.Level(testLogLevel()))))
	cfg, c := startEnv(t, olderCRDs(t))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	zones, err := os.MkdirTemp("", "dnsplane-oldcrd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(zones) })
	a, err := app.New(ctx, app.Config{
		Rest: cfg, MetricsAddr: "0", ProbeAddr: "0", ZoneDir: zones, DNSAddr: "127.0.0.1:0",
		NameServerAddr: netip.MustParseAddr("127.0.0.1"), OwnerID: "older-crds", GeoTag: "eu",
		HeartbeatInterval: 30 * time.Second, HeartbeatThreshold: 5 * time.Minute, SOAPollInterval: 200 * time.Millisecond,
		ZoneResync: time.Hour, ScrapeInterval: time.Hour, GslbInterval: time.Second, GslbPeerTimeout: time.Second,
		GslbPeerPort: 53, Registerer: prometheus.NewRegistry(), SkipNameValidation: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = a.Manager.Start(ctx) }()
	create := func(objs ...client.Object) {
		t.Helper()
		for _, o := range objs {
			if err := c.Create(ctx, o); err != nil {
				t.Fatalf("create %T %s: %v", o, o.GetName(), err)
			}
		}
	}
	const ns = "apps"
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dns"}, Type: "dnsplane.io/local"},
		&dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "old"}, Spec: dnsv1.DNSZoneSpec{Zone: "old.test", ProviderRef: dnsv1.SecretReference{Name: "dns"}}})
	zone := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "old"}}
	waitReady(ctx, t, c, zone, dnsv1.ReasonReady)

	endpoint := func(name, ip string) []dnsv1.Endpoint {
		return []dnsv1.Endpoint{{DNSName: name, RecordType: "A", Targets: []string{ip}}}
	}
	ep := &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "www"}}
	ep.Spec.Endpoints, ep.Spec.ApprovedPlan = endpoint("www.old.test", "192.0.2.1"), "pruned-by-the-older-schema"
	rec := &dnsv1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: dnsv1.DNSRecordSpec{RootHost: "app.old.test"}}
	rec.Spec.Endpoints = endpoint("app.old.test", "192.0.2.2")
	create(ep, rec)
	gslbBackend(ctx, t, c, ns, "192.0.2.3")
	// As kubectl applies it: without spec.strategy.
	create(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": dnsv1.GroupVersion.String(), "kind": "Gslb", "metadata": map[string]any{"namespace": ns, "name": "g"},
		"spec": map[string]any{"resourceRef": map[string]any{"kind": "Service", "name": "web"}, "hosts": []any{"g.old.test"}, "zoneRef": map[string]any{"name": "old"}},
	}})
	g := &dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "g"}}
	// As a Go client builds it: a typed Gslb without a strategy. Its zero
	// strategy is left out (omitzero), not sent as type "", which the older schema, without the
	// roundRobin default, refused.
	goGslb := &dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "g-go"}, Spec: dnsv1.GslbSpec{
		ResourceRef: dnsv1.ResourceReference{Kind: dnsv1.ResourceKindService, Name: "web"},
		Hosts:       []string{"go.old.test"}, ZoneRef: dnsv1.ZoneReference{Name: "old"},
	}}
	create(goGslb)

	pruned := &unstructured.Unstructured{}
	pruned.SetGroupVersionKind(dnsv1.GroupVersion.WithKind("DNSEndpoint"))
	if err := c.Get(ctx, client.ObjectKeyFromObject(ep), pruned); err != nil {
		t.Fatal(err)
	}
	if v, found, _ := unstructured.NestedFieldNoCopy(pruned.Object, "spec", "approvedPlan"); found {
		t.Fatalf("the older schema kept spec.approvedPlan = %v; the test needs it pruned", v)
	}
	if s, found, _ := unstructured.NestedFieldNoCopy(pruned.Object, "spec", "strategy"); found {
		t.Fatalf("the older schema defaulted spec.strategy to %v; the test needs no default", s)
	}
	waitReady(ctx, t, c, ep, dnsv1.ReasonPublished)
	waitReady(ctx, t, c, rec, dnsv1.ReasonPublished)
	waitReady(ctx, t, c, g, dnsv1.ReasonPublished)
	waitReady(ctx, t, c, goGslb, dnsv1.ReasonPublished)
	for name, want := range map[string]string{"www.old.test.": "192.0.2.1", "app.old.test.": "192.0.2.2", "g.old.test.": "192.0.2.3", "go.old.test.": "192.0.2.3"} {
		eventually(t, time.Minute, "the embedded server answers "+name, func() error {
			return answers(a.Server.Addr(), name, want)
		})
	}
	waitReady(ctx, t, c, zone, dnsv1.ReasonReady) // still Ready, after its status writes were pruned
}

// testLogLevel is the zap level of the manager's logs: errors only, or everything with
// TEST_VERBOSE set.
func testLogLevel() int8 {
	if os.Getenv("TEST_VERBOSE") != "" {
		return -2
	}
	return 2
}

// gslbBackend creates, in ns, a selector-less LoadBalancer Service "web" whose status holds lbIP
// (no cloud controller runs here) and an EndpointSlice with one ready endpoint.
func gslbBackend(ctx context.Context, t *testing.T, c client.Client, ns, lbIP string) {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
	if err := c.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: lbIP}}
	if err := c.Status().Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.10"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}
	if err := c.Create(ctx, es); err != nil {
		t.Fatal(err)
	}
}

// waitReady waits until obj (a dnsplane kind) has Ready=True with reason and observedGeneration
// equal to its generation.
func waitReady(ctx context.Context, t *testing.T, c client.Client, obj client.Object, reason string) {
	t.Helper()
	what := fmt.Sprintf("%T %s Ready=True %s", obj, obj.GetName(), reason)
	eventually(t, 2*time.Minute, what, func() error {
		if _, err := conditions.Check(ctx, c, obj, dnsv1.ConditionReady, conditions.Want{Status: metav1.ConditionTrue, Reason: reason}); err != nil {
			return err
		}
		observed, err := conditions.ObservedGeneration(obj)
		if err != nil {
			return err
		}
		if observed != obj.GetGeneration() {
			return fmt.Errorf("observedGeneration %d, generation %d", observed, obj.GetGeneration())
		}
		return nil
	})
}

// answers checks that the DNS server at addr answers name A with exactly want (one address).
func answers(addr, name, want string) error {
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	cl := &dns.Client{Timeout: 2 * time.Second}
	r, _, err := cl.Exchange(m, addr)
	if err != nil {
		return fmt.Errorf("query %s: %w", name, err)
	}
	var got []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			got = append(got, a.A.String())
		}
	}
	if !slices.Equal(got, []string{want}) {
		return fmt.Errorf("%s A = %v (rcode %s), want [%s]", name, got, dns.RcodeToString[r.Rcode], want)
	}
	return nil
}
