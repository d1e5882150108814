package app_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/miekg/dns"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/app"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
)

// clusterMode: the ClusterRole of config/rbac/role.yaml and the leader election Role. The
// manager resolves its owner ID (kube-system's UID), takes the Lease in its namespace, keeps
// its zones in ConfigMaps there, reconciles every kind, and serves /metrics on a non-loopback address over
// HTTPS to a token bound to the metrics-reader ClusterRole only.
func (h *harness) clusterMode(t *testing.T) {
	const sys = "dnsplane-system"
	user := h.serviceAccount(t, sys, "controller-manager")
	role, reader := h.manager.DeepCopy(), h.reader.DeepCopy()
	role.Name, reader.Name = "dnsplane-manager-role", "dnsplane-metrics-reader"
	h.create(t, role, reader,
		clusterBinding("dnsplane-manager-rolebinding", role.Name, sys, "controller-manager"),
		clusterBinding("dnsplane-scraper", reader.Name, sys, "scraper"))
	scraper, other := h.token(t, sys, "scraper"), h.token(t, sys, "other")
	port := strconv.Itoa(ports.TCPUDP(t, ""))
	h.dnsService(t, sys)
	run(t, app.Config{Rest: h.impersonating(user), LeaderElect: true, LeaderElectionNamespace: sys, ZoneStoreNamespace: sys, DNSService: "dns",
		MetricsAddr: ":" + port, MetricsSecure: true, Sources: sources, SourcePollInterval: 200 * time.Millisecond}) // Registerer nil: the registry /metrics serves

	h.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}})
	objs := h.objects(t, "apps", "rbac.test")
	h.waitReady(t, objs)
	h.waitSigned(t, "apps")
	h.waitSourceEndpoint(t, "apps")
	h.waitZoneObjects(t, sys)
	h.secretsForbidden(t, user, "apps")

	url := "https://127.0.0.1:" + port + "/metrics"
	for _, c := range []struct {
		who, token string
		want       int
	}{{"no token", "", http.StatusUnauthorized}, {"a token without metrics-reader", other, http.StatusForbidden}, {"the scraper's token", scraper, http.StatusOK}} {
		eventually(t, time.Minute, "/metrics with "+c.who, func() error {
			code, body, err := scrape(t, url, c.token)
			if err != nil {
				return err
			}
			if code != c.want {
				return fmt.Errorf("status %d, want %d: %.200s", code, c.want, body)
			}
			if code == http.StatusOK && (!strings.Contains(body, "dnsplane_provider_requests_total") || !strings.Contains(body, "controller_runtime_reconcile_total")) {
				return fmt.Errorf("body lacks dnsplane's or controller-runtime's series: %.300s", body)
			}
			return nil
		})
	}
}

// namespacedMode: --watch-namespaces=a,b with the same rules minus the cluster-scoped ones as
// Roles in a and b only, and no ClusterRole. Objects in a and b reconcile; those in c are
// untouched; the identity may list no Secrets anywhere and nothing in c, nor read kube-system.
// /metrics on loopback is plain HTTP with no token, and docs/metrics.md lists every series the
// manager registered.
func (h *harness) namespacedMode(t *testing.T) {
	const sys = "dnsplane-ns"
	user := h.serviceAccount(t, sys, "controller-manager")
	rules := h.namespacedRules(t, h.manager.Rules)
	for _, ns := range []string{"a", "b", "c"} {
		h.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	for _, ns := range []string{"a", "b"} {
		h.create(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dnsplane-manager-role"}, Rules: rules},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dnsplane-manager-rolebinding"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: sys, Name: "controller-manager"}},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "dnsplane-manager-role"}})
	}
	port := strconv.Itoa(ports.TCPUDP(t, ""))
	reg := &recordingRegisterer{Registerer: prometheus.NewRegistry()}
	svc := h.dnsService(t, sys)
	a, _ := runApp(t, app.Config{Rest: h.impersonating(user), LeaderElect: true, LeaderElectionNamespace: sys, ZoneStoreNamespace: sys, DNSService: "dns",
		WatchNamespaces: []string{"a", "b"}, OwnerID: "ns-owner", MetricsAddr: "127.0.0.1:" + port, MetricsSecure: true,
		Registerer: reg, Sources: sources, SourcePollInterval: 200 * time.Millisecond})

	inA, inB, inC := h.objects(t, "a", "a.rbac.test"), h.objects(t, "b", "b.rbac.test"), h.objects(t, "c", "c.rbac.test")
	h.waitReady(t, inA)
	h.waitReady(t, inB)
	h.waitSigned(t, "a")
	h.waitSigned(t, "b")
	h.waitSourceEndpoint(t, "a")
	h.waitSourceEndpoint(t, "b")
	h.waitZoneObjects(t, sys)
	for o := range inC { // a and b are done: the manager never saw c
		conds, err := h.conditions(t, o)
		if err != nil || len(conds) > 0 || len(o.GetFinalizers()) > 0 {
			t.Errorf("%T c/%s was touched: conditions %+v, finalizers %v, err %v", o, o.GetName(), conds, o.GetFinalizers(), err)
		}
	}
	h.secretsForbidden(t, user, "a", "b", "c")
	// The glue follows the dns Service through its watch, which role.yaml's namespaced Role in
	// the manager's namespace grants (sys is not a watched namespace).
	svc = recreate(t, h.admin, svc)
	signedSOA(t, a.Server.Addr(), "a.rbac.test", "b.rbac.test")
	glueFollows(t, a.Server.Addr(), "the glue follows the dns Service in namespaced mode", []string{svc.Spec.ClusterIP}, "a.rbac.test", "b.rbac.test")
	impersonated, err := client.New(h.impersonating(user), client.Options{Scheme: app.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	forbidden(t, "list DNSZones in c", impersonated.List(ctx(t), &dnsv1.DNSZoneList{}, client.InNamespace("c")))
	forbidden(t, "list DNSZones in every namespace", impersonated.List(ctx(t), &dnsv1.DNSZoneList{}))
	forbidden(t, "get Secret c/dns", impersonated.Get(ctx(t), client.ObjectKey{Namespace: "c", Name: "dns"}, &corev1.Secret{}))
	forbidden(t, "get Namespace kube-system", impersonated.Get(ctx(t), client.ObjectKey{Name: "kube-system"}, &corev1.Namespace{}))

	documented(t, reg.names)
	code, body, err := scrape(t, "http://127.0.0.1:"+port+"/metrics", "")
	if err != nil || code != http.StatusOK || !strings.Contains(body, "controller_runtime_") {
		t.Errorf("loopback /metrics without a token: status %d, err %v, body %.200s", code, err, body)
	}
}

// dnsService creates the dns Service in ns, whose glue controller (--local-dns-service) watches it
// with role.yaml's namespaced Role only: a manager whose Role lacked list or watch there would
// never sync its cache and stop with an error.
func (h *harness) dnsService(t *testing.T, ns string) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dns"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "dns-udp", Port: 53, Protocol: corev1.ProtocolUDP}}}}
	h.create(t, svc)
	return svc
}

func clusterBinding(name, role, ns, sa string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}}
}

// waitZoneObjects waits until the leader wrote the zone store's ConfigMaps in ns (the embedded
// server's zones: the objects' zones use the local provider), which the leader election Role
// grants.
func (h *harness) waitZoneObjects(t *testing.T, ns string) {
	t.Helper()
	eventually(t, time.Minute, "zone ConfigMaps in "+ns, func() error {
		var cms corev1.ConfigMapList
		if err := h.admin.List(ctx(t), &cms, client.InNamespace(ns), client.HasLabels{"dnsplane.io/zone-store"}); err != nil {
			return err
		}
		if len(cms.Items) == 0 {
			return fmt.Errorf("none")
		}
		return nil
	})
}

// recordingRegisterer records the fully-qualified name of every metric registered through it.
type recordingRegisterer struct {
	prometheus.Registerer
	names []string
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (r *recordingRegisterer) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			r.names = append(r.names, m[1])
		}
	}
	return r.Registerer.Register(c)
}

// documented checks that docs/metrics.md names every one of the manager's own series.
func documented(t *testing.T, names []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 5 {
		t.Fatalf("only %d series registered: %v", len(names), names)
	}
	for _, n := range names {
		if !strings.Contains(string(b), "`"+n+"`") {
			t.Errorf("docs/metrics.md does not list %s", n)
		}
	}
}

// signedSOA waits until the server at addr answers the SOA of each of zones, asked with DO, with
// its RRSIG: the signer read the key Secret with the manager's own rights.
func signedSOA(t *testing.T, addr string, zones ...string) {
	t.Helper()
	for _, z := range zones {
		eventually(t, time.Minute, z+" SOA signed", func() error {
			m := new(dns.Msg)
			m.SetQuestion(dns.Fqdn(z), dns.TypeSOA)
			m.SetEdns0(4096, true)
			r, _, err := (&dns.Client{Net: "tcp", Timeout: 5 * time.Second}).Exchange(m, addr)
			if err != nil {
				return err
			}
			for _, rr := range r.Answer {
				if sig, ok := rr.(*dns.RRSIG); ok && sig.TypeCovered == dns.TypeSOA {
					return nil
				}
			}
			return fmt.Errorf("no RRSIG of the SOA:\n%v", r)
		})
	}
}
