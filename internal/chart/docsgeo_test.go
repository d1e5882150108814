package chart

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/app"
)

// TestDocsKindGeoStepAfterTheSamples: docs/install.md's "Try it on kind" in order, as far as a
// manager on a real API server shows it: step 3's samples (config/samples, applied into the
// default namespace as `kubectl apply -k` does) become Ready, then step 6's objects, read from the
// step's heredoc, are created as its `kubectl apply` creates them, with the manager's geo tag of
// step 6's values (eu). Step 6's DNSZone and Gslb must become Ready, as its
// `kubectl wait --for=condition=Ready dz/gslb gslb/app` waits: a zone of step 6 inside step 3's
// root zone, in another namespace, would stay ParentNotAllowed. The kind node's parts are stood
// in for: the app's ready Pod by an EndpointSlice, the load-balancer address by the step's own
// status patch.
func TestDocsKindGeoStepAfterTheSamples(t *testing.T) {
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.Level(testLogLevel()))))
	cfg, c := startEnv(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	startDocsManager(ctx, t, cfg)

	// Step 3: bin/kubectl apply -k config/samples/, then wait for every object to be Ready.
	samples := sampleObjects(t)
	for _, o := range samples {
		o.SetNamespace("default")
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("step 3: create %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	for _, o := range samples {
		if reason, ok := readyReasons[o.GetKind()]; ok {
			waitReady(ctx, t, c, typed(t, o), reason)
		}
	}

	// Step 6: its kubectl apply heredoc, then its status patch of the app's Service.
	objs := stepHeredoc(t, "6. ")
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("step 6: create %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	standInForKind(ctx, t, c, objs)
	for _, o := range objs {
		if reason, ok := readyReasons[o.GetKind()]; ok {
			waitReady(ctx, t, c, typed(t, o), reason)
		}
	}
}

// readyReasons are the Ready=True reasons the docs' kubectl wait sees, by kind.
var readyReasons = map[string]string{
	"DNSZone": dnsv1.ReasonReady, "DNSEndpoint": dnsv1.ReasonPublished, "DNSRecord": dnsv1.ReasonPublished, "Gslb": dnsv1.ReasonPublished,
}

// startDocsManager starts a manager on cfg as the kind section's release runs it: the embedded
// server, the geo tag eu of step 6's values, no GeoIP database; it stops with ctx.
func startDocsManager(ctx context.Context, t *testing.T, cfg *rest.Config) {
	t.Helper()
	zones := t.TempDir()
	a, err := app.New(ctx, app.Config{
		Rest: cfg, MetricsAddr: "0", ProbeAddr: "0", ZoneDir: zones, DNSAddr: "127.0.0.1:0",
		NameServerAddr: netip.MustParseAddr("127.0.0.1"), OwnerID: "docs-kind", GeoTag: "eu",
		HeartbeatInterval: 30 * time.Second, HeartbeatThreshold: 5 * time.Minute, SOAPollInterval: 200 * time.Millisecond,
		ZoneResync: time.Hour, ScrapeInterval: 500 * time.Millisecond, GslbInterval: time.Second, GslbPeerTimeout: time.Second,
		GslbPeerPort: 53, Registerer: prometheus.NewRegistry(), SkipNameValidation: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Manager.Start(ctx) }()
	t.Cleanup(func() { <-done })
}

// sampleObjects returns the objects of config/samples/kustomization.yaml's resources, in order.
func sampleObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	dir := filepath.Join(repoRoot, "config", "samples")
	raw, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(raw, &k); err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, r := range k.Resources {
		raw, err := os.ReadFile(filepath.Join(dir, r))
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decodeAll(raw)
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		out = append(out, objs...)
	}
	return out
}

// stepHeredoc returns the objects of the first `kubectl apply -f - <<'EOF'` heredoc in step
// prefix of docs/install.md's "Try it on kind".
func stepHeredoc(t *testing.T, prefix string) []*unstructured.Unstructured {
	t.Helper()
	for _, b := range docsBlocks(t, "## Try it on kind", prefix) {
		head, body, ok := strings.Cut(b, "apply -f - <<'EOF'\n")
		if !ok || !strings.HasSuffix(head, "kubectl ") {
			continue
		}
		doc, _, ok := strings.Cut(body, "\nEOF\n")
		if !ok {
			t.Fatalf("step %q: a heredoc without its EOF line:\n%s", prefix, b)
		}
		objs, err := decodeAll([]byte(doc))
		if err != nil {
			t.Fatalf("step %q's heredoc: %v", prefix, err)
		}
		return objs
	}
	t.Fatalf("docs/install.md: no kubectl apply heredoc in step %q", prefix)
	return nil
}

// standInForKind does for step 6's app what kind and the step's commands do: the app's Service
// gets the step's load-balancer address (its kubectl patch --subresource=status) and, standing
// in for the Deployment's ready Pod, an EndpointSlice with one ready endpoint.
func standInForKind(ctx context.Context, t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "Service" {
			continue
		}
		var svc corev1.Service
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), &svc); err != nil {
			t.Fatal(err)
		}
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.18.0.10"}}
		if err := c.Status().Update(ctx, &svc); err != nil {
			t.Fatal(err)
		}
		es := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: svc.Namespace, Name: svc.Name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.10"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		}
		if err := c.Create(ctx, es); err != nil {
			t.Fatal(err)
		}
	}
}

// typed returns o (a dnsplane kind) as its Go type, for waitReady.
func typed(t *testing.T, o *unstructured.Unstructured) client.Object {
	t.Helper()
	var out client.Object
	switch o.GetKind() {
	case "DNSZone":
		out = &dnsv1.DNSZone{}
	case "DNSEndpoint":
		out = &dnsv1.DNSEndpoint{}
	case "DNSRecord":
		out = &dnsv1.DNSRecord{}
	case "Gslb":
		out = &dnsv1.Gslb{}
	default:
		t.Fatalf("typed: %s is not a dnsplane kind", o.GetKind())
	}
	out.SetNamespace(o.GetNamespace())
	out.SetName(o.GetName())
	return out
}
