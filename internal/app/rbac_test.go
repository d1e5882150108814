package app_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/app"
	"github.com/dnsplane/dnsplane/internal/testing/conditions"
	"github.com/dnsplane/dnsplane/internal/testing/envtest"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/provider/factory"
	"github.com/dnsplane/dnsplane/pkg/source"
)

// TestRBAC_LeastPrivilege runs the manager built by the composition root
// against a real kube-apiserver that enforces RBAC (envtest's --authorization-mode=RBAC), with a
// rest.Config impersonating its ServiceAccount, which holds only the rules of config/rbac (read
// from the YAML, so that the kubebuilder markers stay the only source): in cluster mode the
// ClusterRole, in namespaced mode Roles of the same rules minus the cluster-scoped ones in the
// watched namespaces only. Each mode reconciles one object of every kind, runs the sources
// (service, ingress, gateway-httproute, crd: their DNSEndpoint from an annotated Service is
// published), and the identity may neither list nor watch Secrets (it holds get only).
func TestRBAC_LeastPrivilege(t *testing.T) {
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.Level(2)))) // errors only
	cfg := envtest.Start(t, filepath.Join("..", ".."))
	// The kinds the sources read, so that role.yaml's rules on them are served and the sources'
	// RBAC is exercised too.
	envtest.InstallCRDs(t, cfg, envtest.SourceCRDs(t, filepath.Join("..", "..")))
	h := newHarness(t, cfg)
	t.Run("cluster", h.clusterMode)
	t.Run("namespaced", h.namespacedMode)
}

// harness holds the admin clients of the envtest API server and the rules of config/rbac.
type harness struct {
	cfg        *rest.Config
	admin      client.Client
	kube       *kubernetes.Clientset
	namespaced map[string]bool // "group/resource" -> namespaced, from discovery
	manager    rbacv1.ClusterRole
	managerNS  rbacv1.Role // role.yaml's namespaced Role: the zone store's ConfigMaps, the dns Service
	leader     rbacv1.Role
	reader     rbacv1.ClusterRole
}

func newHarness(t *testing.T, cfg *rest.Config) *harness {
	t.Helper()
	admin, err := client.New(cfg, client.Options{Scheme: app.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{cfg: cfg, admin: admin, kube: kubernetes.NewForConfigOrDie(cfg), namespaced: map[string]bool{}}
	readYAML(t, "role.yaml", &h.manager, &h.managerNS)
	readYAML(t, "leader_election_role.yaml", &h.leader)
	readYAML(t, "metrics_reader_role.yaml", &h.reader)
	lists, err := discovery.NewDiscoveryClientForConfigOrDie(cfg).ServerPreferredResources()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lists {
		gv, _ := splitGV(l.GroupVersion)
		for _, r := range l.APIResources {
			h.namespaced[gv+"/"+r.Name] = r.Namespaced
		}
	}
	return h
}

func splitGV(gv string) (group, version string) {
	if g, v, ok := strings.Cut(gv, "/"); ok {
		return g, v
	}
	return "", gv
}

// readYAML reads config/rbac/<name>'s documents into objs, in order.
func readYAML(t *testing.T, name string, objs ...any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", name))
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for _, d := range strings.Split(string(b), "\n---\n") {
		if d = strings.TrimSpace(strings.TrimPrefix(d, "---")); d != "" {
			docs = append(docs, d)
		}
	}
	if len(docs) != len(objs) {
		t.Fatalf("%s holds %d documents, want %d", name, len(docs), len(objs))
	}
	for i, obj := range objs {
		if err := yaml.Unmarshal([]byte(docs[i]), obj); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// namespacedRules returns rules without their cluster-scoped resources (a Role cannot grant
// them), dropping rules left empty.
func (h *harness) namespacedRules(t *testing.T, rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	t.Helper()
	var out []rbacv1.PolicyRule
	for _, r := range rules {
		var keep []string
		for _, res := range r.Resources {
			base, _, _ := strings.Cut(res, "/")
			for _, g := range r.APIGroups {
				ns, ok := h.namespaced[g+"/"+base]
				if !ok {
					t.Fatalf("role.yaml names %s/%s, which the API server does not serve", g, base)
				}
				if ns {
					keep = append(keep, res)
					break
				}
			}
		}
		if len(keep) > 0 {
			r.Resources = keep
			out = append(out, r)
		}
	}
	return out
}

func (h *harness) create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := h.admin.Create(ctx(t), o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// serviceAccount creates namespace ns with ServiceAccount sa, and the leader election Role and
// role.yaml's namespaced Role (the zone store's) bound to it; it returns the SA's user name.
func (h *harness) serviceAccount(t *testing.T, ns, sa string) string {
	t.Helper()
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}}
	leader, zones := h.leader.DeepCopy(), h.managerNS.DeepCopy()
	leader.Namespace, leader.Name = ns, "leader-election-role"
	zones.Namespace, zones.Name = ns, "dnsplane-manager-role"
	h.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}}, leader, zones,
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "leader-election-rolebinding"}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: leader.Name}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dnsplane-manager-rolebinding"}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: zones.Name}})
	return "system:serviceaccount:" + ns + ":" + sa
}

// impersonating returns the admin config acting as user (the API server adds a ServiceAccount's
// groups).
func (h *harness) impersonating(user string) *rest.Config {
	c := rest.CopyConfig(h.cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user}
	c.QPS, c.Burst = 1000, 2000
	return c
}

// run builds the manager of c and runs it until the test ends (or stop is called); stop waits
// for it to return.
func run(t *testing.T, c app.Config) (stop func()) {
	t.Helper()
	_, stop = runApp(t, c)
	return stop
}

// runApp is run, and returns the App too.
func runApp(t *testing.T, c app.Config) (_ *app.App, stop func()) {
	t.Helper()
	c.DNSAddr, c.ZoneDir, c.NameServerAddr = "127.0.0.1:0", t.TempDir(), netip.MustParseAddr("127.0.0.1")
	c.ProbeAddr, c.SOAPollInterval, c.ZoneResync, c.ScrapeInterval = "0", 200*time.Millisecond, time.Hour, time.Hour
	c.HeartbeatInterval, c.HeartbeatThreshold = 30*time.Second, 5*time.Minute
	c.GslbInterval, c.GslbPeerTimeout, c.GslbPeerPort, c.GeoTag = 30*time.Second, 2*time.Second, 53, "eu"
	c.SkipNameValidation = true
	runCtx, cancel := context.WithCancel(context.Background())
	a, err := app.New(runCtx, c)
	if err != nil {
		cancel()
		t.Fatalf("app.New: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("manager: %v", err)
			}
		case <-time.After(time.Minute): // a manager whose caches never synced may not return
			t.Errorf("the manager did not stop within a minute of its context ending")
		}
	}
	t.Cleanup(stop)
	return a, stop
}

// objects creates in ns a dnsplane.io/local Secret and a DNSZone of zone, a DNSEndpoint, a
// DNSRecord, and a Gslb over a LoadBalancer Service with one ready endpoint; it returns the
// dnsplane objects with the reason of Ready=True each must reach.
func (h *harness) objects(t *testing.T, ns, zone string) map[client.Object]string {
	t.Helper()
	a := func(name string) dnsv1.PublishingSpec {
		return dnsv1.PublishingSpec{Endpoints: []dnsv1.Endpoint{{DNSName: name, RecordType: "A", Targets: dnsv1.Targets{"192.0.2.1"}}}}
	}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	svcMeta := meta("app")
	svcMeta.Annotations = map[string]string{"external-dns.alpha.kubernetes.io/hostname": "src." + zone}
	svc := &corev1.Service{ObjectMeta: svcMeta, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
	h.create(t, &corev1.Secret{ObjectMeta: meta("dns"), Type: factory.TypeLocal}, svc,
		&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-1", Labels: map[string]string{discoveryv1.LabelServiceName: "app"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.10"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}}})
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.10"}}
	if err := h.admin.Status().Update(ctx(t), svc); err != nil {
		t.Fatal(err)
	}
	objs := map[client.Object]string{
		&dnsv1.DNSZone{ObjectMeta: meta("zone"), Spec: dnsv1.DNSZoneSpec{Zone: zone, ProviderRef: dnsv1.SecretReference{Name: "dns"},
			DNSSEC: &dnsv1.DNSSEC{Enabled: true}}}: dnsv1.ReasonReady,
		&dnsv1.DNSEndpoint{ObjectMeta: meta("www"), Spec: dnsv1.DNSEndpointSpec{PublishingSpec: a("www." + zone)}}:                      dnsv1.ReasonPublished,
		&dnsv1.DNSRecord{ObjectMeta: meta("app"), Spec: dnsv1.DNSRecordSpec{RootHost: "app." + zone, PublishingSpec: a("app." + zone)}}: dnsv1.ReasonPublished,
		&dnsv1.Gslb{ObjectMeta: meta("app"), Spec: dnsv1.GslbSpec{ResourceRef: dnsv1.ResourceReference{Kind: "Service", Name: "app"},
			Hosts: []string{"g." + zone}, ZoneRef: dnsv1.ZoneReference{Name: "zone"}, Strategy: dnsv1.GslbStrategy{Type: "roundRobin", DNSTTLSeconds: 30}}}: dnsv1.ReasonPublished,
	}
	for o := range objs {
		h.create(t, o)
	}
	return objs
}

// waitSigned waits until the DNSZone "zone" of ns is signed (Secure=False, reason
// DSPending): the manager created its key Secret, which role.yaml's create on Secrets allows.
func (h *harness) waitSigned(t *testing.T, ns string) {
	t.Helper()
	z := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "zone"}}
	eventually(t, 2*time.Minute, ns+"/zone signed", func() error {
		conds, err := h.conditions(t, z)
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(conds, dnsv1.ConditionSecure)
		if c == nil || c.Reason != dnsv1.ReasonDSPending {
			return fmt.Errorf("Secure is %+v", c)
		}
		return nil
	})
}

// sources are the --source names both modes run.
var sources = source.Config{Sources: []string{source.Service, source.Ingress, source.GatewayHTTPRoute, source.CRD}}

// waitSourceEndpoint waits until the service source's DNSEndpoint of ns/app is published.
func (h *harness) waitSourceEndpoint(t *testing.T, ns string) {
	t.Helper()
	h.waitReady(t, map[client.Object]string{&dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "svc-app"}}: dnsv1.ReasonPublished})
}

// conditions returns obj's status conditions, read fresh by the admin client.
func (h *harness) conditions(t *testing.T, obj client.Object) ([]metav1.Condition, error) {
	return conditionsOf(t, h.admin, obj)
}

// conditionsOf returns obj's status conditions, read fresh through c.
func conditionsOf(t *testing.T, c client.Client, obj client.Object) ([]metav1.Condition, error) {
	if err := c.Get(ctx(t), client.ObjectKeyFromObject(obj), obj); err != nil {
		return nil, err
	}
	return conditions.Of(obj)
}

// waitReady waits until every object is Ready=True with its reason.
func (h *harness) waitReady(t *testing.T, objs map[client.Object]string) {
	t.Helper()
	waitReadyThrough(t, h.admin, objs)
}

// waitReadyThrough waits up to 2 min for each object, read through c, to be Ready=True with
// its reason.
func waitReadyThrough(t *testing.T, c client.Client, objs map[client.Object]string) {
	t.Helper()
	for o, reason := range objs {
		conditions.Wait(t, c, o, dnsv1.ConditionReady, conditions.Want{Status: metav1.ConditionTrue, Reason: reason}, 2*time.Minute)
	}
}

// eventually is testrun.Eventually: check every 100 ms until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	testrun.Eventually(t, timeout, what, check)
}

// forbidden fails the test unless err is the API server's Forbidden.
func forbidden(t *testing.T, what string, err error) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s: got %v, want Forbidden", what, err)
	}
}

// secretsForbidden checks that user may neither list nor watch Secrets in any namespace, nor
// list them in each of namespaces.
func (h *harness) secretsForbidden(t *testing.T, user string, namespaces ...string) {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(h.impersonating(user))
	_, err := kube.CoreV1().Secrets("").List(ctx(t), metav1.ListOptions{})
	forbidden(t, "list Secrets in every namespace", err)
	w, err := kube.CoreV1().Secrets("").Watch(ctx(t), metav1.ListOptions{})
	if w != nil {
		w.Stop()
	}
	forbidden(t, "watch Secrets in every namespace", err)
	for _, ns := range namespaces {
		_, err := kube.CoreV1().Secrets(ns).List(ctx(t), metav1.ListOptions{})
		forbidden(t, "list Secrets in "+ns, err)
		w, err := kube.CoreV1().Secrets(ns).Watch(ctx(t), metav1.ListOptions{})
		if w != nil {
			w.Stop()
		}
		forbidden(t, "watch Secrets in "+ns, err)
	}
}

// scrape GETs url with token (none if empty), TLS unverified (the metrics server's certificate
// is self-signed), and returns the status code and body.
func scrape(t *testing.T, url, token string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed test server
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// token returns a bound token of ServiceAccount ns/sa, created if need be.
func (h *harness) token(t *testing.T, ns, sa string) string {
	t.Helper()
	if err := h.admin.Create(ctx(t), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	tr, err := h.kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx(t), sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}
