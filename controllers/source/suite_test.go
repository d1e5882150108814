package source_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/app"
	"github.com/dnsplane/dnsplane/internal/testing/envtest"
	"github.com/dnsplane/dnsplane/internal/testing/secretscan"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/provider/factory"
	"github.com/dnsplane/dnsplane/pkg/source"
)

// The suite runs the manager of the composition root (internal/app) with every source enabled
// against a real kube-apiserver and etcd (envtest) that serves the Gateway API's and
// external-dns's CRDs, with the embedded DNS server on a free loopback port: what a source
// publishes is asked of that server.
var (
	k8s     client.Client
	restCfg *rest.Config
	dnsAddr string
)

const root = "../.."

func TestMain(m *testing.M) { os.Exit(runSuite(m)) }

func runSuite(m *testing.M) int {
	return envtest.Run(m, root, envtest.Options{SourceCRDs: true}, func(cfg *rest.Config) (func() error, error) {
		restCfg = cfg
		ctx, cancel := context.WithCancel(context.Background())
		// The secret scan (internal/testing/secretscan): no Secret value reaches the manager's
		// logs, Events, object status or metrics, or the suite fails at its end.
		scan, err := secretscan.StartSuite(ctx, cfg, app.NewScheme())
		if err != nil {
			cancel()
			return nil, err
		}
		logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.Level(2)), scan.ZapOption()))
		reg := prometheus.NewRegistry()
		verdict := func() error {
			defer cancel()
			return scan.Verdict(reg, ctrlmetrics.Registry)
		}
		a, err := app.New(ctx, managerConfig(cfg, mustTemp(), source.Config{Sources: source.Names()}, reg))
		if err != nil {
			cancel()
			return nil, err
		}
		dnsAddr = a.Server.Addr()
		go func() {
			if err := a.Manager.Start(ctx); err != nil {
				fmt.Fprintln(os.Stderr, "manager:", err)
			}
		}()
		// The tests read and write the API server directly (no cache lag in what they check).
		k8s, err = client.New(cfg, client.Options{Scheme: app.NewScheme()})
		return verdict, err
	})
}

// managerConfig is the test manager's configuration with sources src.
func managerConfig(cfg *rest.Config, zoneDir string, src source.Config, reg prometheus.Registerer) app.Config {
	return app.Config{
		Rest: cfg, MetricsAddr: "0", ProbeAddr: "0", DNSAddr: "127.0.0.1:0", OwnerID: "source-test",
		ZoneDir: zoneDir, NameServerAddr: netip.MustParseAddr("127.0.0.1"),
		SOAPollInterval: 200 * time.Millisecond, ZoneResync: time.Hour, ScrapeInterval: time.Hour,
		HeartbeatInterval: 30 * time.Second, HeartbeatThreshold: 5 * time.Minute,
		GslbInterval: 30 * time.Second, GslbPeerTimeout: 2 * time.Second, GslbPeerPort: 53,
		Registerer: reg, Sources: src, SourcePollInterval: 200 * time.Millisecond, SkipNameValidation: true,
	}
}

func mustTemp() string {
	d, err := os.MkdirTemp("", "dnsplane-source-zones-")
	if err != nil {
		panic(err)
	}
	return d
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	testrun.Eventually(t, 60*time.Second, what, check)
}

func create(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(ctxT(t), o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

// zoneNamespace creates namespace ns with a dnsplane.io/local Secret and a DNSZone of zone.
func zoneNamespace(t *testing.T, c client.Client, ns, zone string) {
	t.Helper()
	create(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dns"}, Type: factory.TypeLocal},
		&dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "zone"}, Spec: dnsv1.DNSZoneSpec{Zone: zone, ProviderRef: dnsv1.SecretReference{Name: "dns"}}})
}

// waitEndpoint waits until the DNSEndpoint ns/name exists, is Ready=True/Published and check
// accepts it, and returns it.
func waitEndpoint(t *testing.T, c client.Client, ns, name string, check func(*dnsv1.DNSEndpoint) error) *dnsv1.DNSEndpoint {
	t.Helper()
	ep := &dnsv1.DNSEndpoint{}
	eventually(t, "DNSEndpoint "+ns+"/"+name+" published", func() error {
		if err := c.Get(ctxT(t), client.ObjectKey{Namespace: ns, Name: name}, ep); err != nil {
			return err
		}
		if check != nil {
			if err := check(ep); err != nil {
				return err
			}
		}
		r := meta.FindStatusCondition(ep.Status.Conditions, dnsv1.ConditionReady)
		if r == nil || r.Status != metav1.ConditionTrue || r.Reason != dnsv1.ReasonPublished || r.ObservedGeneration != ep.Generation {
			return fmt.Errorf("Ready %+v", r)
		}
		return nil
	})
	return ep
}

// waitGone waits until the DNSEndpoint ns/name no longer exists.
func waitGone(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	eventually(t, "DNSEndpoint "+ns+"/"+name+" deleted", func() error {
		err := c.Get(ctxT(t), client.ObjectKey{Namespace: ns, Name: name}, &dnsv1.DNSEndpoint{})
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		if err == nil {
			return fmt.Errorf("still there")
		}
		return nil
	})
}

// waitEvent waits until a Warning Event of reason is recorded on the object kind ns/name.
func waitEvent(t *testing.T, c client.Client, ns, kind, name, reason string) {
	t.Helper()
	waitEventMessage(t, c, ns, kind, name, reason, "")
}

// waitEventMessage waits until a Warning Event of reason whose message contains msg is recorded
// on the object kind ns/name.
func waitEventMessage(t *testing.T, c client.Client, ns, kind, name, reason, msg string) {
	t.Helper()
	eventually(t, fmt.Sprintf("Warning %s Event %q on %s %s/%s", reason, msg, kind, ns, name), func() error {
		var list corev1.EventList
		if err := c.List(ctxT(t), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		var seen []string
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name {
				if e.Type == corev1.EventTypeWarning && e.Reason == reason && strings.Contains(e.Message, msg) {
					return nil
				}
				seen = append(seen, e.Reason+": "+e.Message)
			}
		}
		return fmt.Errorf("events on it: %v", seen)
	})
}

// answers returns the sorted answers of the embedded server to name type qtype.
func answers(t *testing.T, name string, qtype uint16) ([]string, error) {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	cl := &dns.Client{Timeout: 2 * time.Second}
	r, _, err := cl.Exchange(m, dnsAddr)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, rr := range r.Answer {
		switch v := rr.(type) {
		case *dns.A:
			out = append(out, v.A.String())
		case *dns.AAAA:
			out = append(out, v.AAAA.String())
		case *dns.CNAME:
			out = append(out, v.Target)
		}
	}
	slices.Sort(out)
	return out, nil
}

// waitAnswer waits until the embedded server answers name qtype with want (none: no answer).
func waitAnswer(t *testing.T, name string, qtype uint16, want ...string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s %s answers %v", name, dns.TypeToString[qtype], want), func() error {
		got, err := answers(t, name, qtype)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("answers %v", got)
		}
		return nil
	})
}

// endpointSlice returns a ready EndpointSlice of Service ns/svc with addrs.
func endpointSlice(ns, svc string, addrs ...string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svc + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4}
	for _, a := range addrs {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	return s
}
