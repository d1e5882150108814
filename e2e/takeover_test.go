//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/answerloop"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
)

// The external-dns takeover: real external-dns v0.22.0 (built by
// hack/bench/build-external-dns.sh, a prerequisite of make e2e) publishes 3 Services, 3 Ingresses
// and 3 of its DNSEndpoints into the root zone on PowerDNS; then cluster 1's manager, restarted
// with the same sources and --adopt-external-dns-owner, derives the same names from the same
// objects and takes them over, while a query loop asks every name every 50 ms.
const (
	xdnsOwner      = "extdns-e2e"   // the owner taken over; its objects are in platformNS
	xdnsOtherOwner = "extdns-other" // a second external-dns owner, never touched
	xdnsOtherNS    = "extdns-b"     // its DNSEndpoint (externaldns.k8s.io)
	xdnsDomain     = "xdns." + rootZone
	xdnsAnn        = "external-dns.kubernetes.io/" // external-dns v0.22's default --annotation-prefix
)

// The kinds of source object, as --source names them.
const (
	kindService = "service"
	kindIngress = "ingress"
	kindCRD     = "crd"
)

// xdnsRecord is one published name and the source object that publishes it: a Service (type
// LoadBalancer, targets in status.loadBalancer), an Ingress (targets in status.loadBalancer) or
// an external-dns DNSEndpoint. external-dns publishes it first, then dnsplane from the same
// object. Every object sets its TTL, so that both sides publish the same TTL.
type xdnsRecord struct {
	kind, name, typ string
	ttl             int64
	targets         []string
}

func (r xdnsRecord) fqdn() string { return r.name + "." + xdnsDomain }

func (r xdnsRecord) qtype() uint16 {
	if r.typ == "CNAME" {
		return dns.TypeCNAME
	}
	return dns.TypeA
}

// answer is the record's value as the query loop reads it: sorted targets, comma-separated.
func (r xdnsRecord) answer() string {
	t := slices.Clone(r.targets)
	slices.Sort(t)
	return strings.Join(t, ",")
}

// endpoint is the DNSEndpoint that dnsplane's source makes for r's object (its name:
// controllers/source EndpointName).
func (r xdnsRecord) endpoint() *dnsv1.DNSEndpoint {
	prefix := map[string]string{kindService: "svc", kindIngress: "ing", kindCRD: "externaldns"}[r.kind]
	return &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: platformNS, Name: prefix + "-" + r.name}}
}

var (
	xdnsTaken = []xdnsRecord{
		{kindService, "svc1", "A", 60, []string{"192.0.2.51", "192.0.2.52"}},
		{kindService, "svc2", "A", 120, []string{"192.0.2.53"}},
		{kindService, "svc3", "CNAME", 60, []string{"lb1.xdns-target.example"}},
		{kindIngress, "ing1", "A", 60, []string{"192.0.2.61"}},
		{kindIngress, "ing2", "CNAME", 120, []string{"lb2.xdns-target.example"}},
		{kindIngress, "ing3", "A", 60, []string{"192.0.2.63", "192.0.2.64"}},
		{kindCRD, "crd1", "A", 60, []string{"192.0.2.71", "192.0.2.72"}},
		{kindCRD, "crd2", "CNAME", 60, []string{"lb3.xdns-target.example"}},
		{kindCRD, "crd3", "A", 120, []string{"192.0.2.73"}},
	}
	xdnsOther = xdnsRecord{kindCRD, "other", "A", 60, []string{"192.0.2.80"}}
	// xdnsSources are the sources of both sides, external-dns's and dnsplane's, and the
	// filters they share; repeated --source, as external-dns takes it (it refuses a
	// comma-separated list; dnsplane takes both forms).
	xdnsSources = []string{"--source=service", "--source=ingress", "--source=crd", "--namespace=" + platformNS, "--domain-filter=" + rootZone}
)

// xdnsSource is the external-dns DNSEndpoint (externaldns.k8s.io/v1alpha1) that publishes r.
func xdnsSource(ns string, r xdnsRecord) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSEndpoint",
		"metadata": map[string]any{"namespace": ns, "name": r.name},
		"spec": map[string]any{"endpoints": []any{map[string]any{
			"dnsName": r.fqdn(), "recordType": r.typ, "recordTTL": r.ttl, "targets": toAny(r.targets),
		}}},
	}}
	return u
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// loadBalancer returns r's targets as load balancer ingress points: IPs or one host name.
func loadBalancer(r xdnsRecord) (svc []corev1.LoadBalancerIngress, ing []networkingv1.IngressLoadBalancerIngress) {
	for _, t := range r.targets {
		if r.typ == "CNAME" {
			svc, ing = append(svc, corev1.LoadBalancerIngress{Hostname: t}), append(ing, networkingv1.IngressLoadBalancerIngress{Hostname: t})
			continue
		}
		svc, ing = append(svc, corev1.LoadBalancerIngress{IP: t}), append(ing, networkingv1.IngressLoadBalancerIngress{IP: t})
	}
	return svc, ing
}

// xdnsService is the Service of type LoadBalancer that publishes r, with its status.
func xdnsService(r xdnsRecord) *corev1.Service {
	lb, _ := loadBalancer(r)
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: platformNS, Name: r.name, Annotations: map[string]string{
			xdnsAnn + "hostname": r.fqdn(), xdnsAnn + "ttl": fmt.Sprint(r.ttl)}},
		Spec:   corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: lb}},
	}
}

// xdnsIngress is the Ingress whose rule's host is r's name, with its status.
func xdnsIngress(r xdnsRecord) *networkingv1.Ingress {
	_, lb := loadBalancer(r)
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: platformNS, Name: r.name, Annotations: map[string]string{xdnsAnn + "ttl": fmt.Sprint(r.ttl)}},
		Spec:       networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: r.fqdn()}}},
		Status:     networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: lb}},
	}
}

// xdnsObject is r's source object, without its status.
func xdnsObject(r xdnsRecord) client.Object {
	switch r.kind {
	case kindService:
		return xdnsService(r)
	case kindIngress:
		return xdnsIngress(r)
	}
	return xdnsSource(platformNS, r)
}

// createSource creates r's source object in c and, for a Service or an Ingress, writes its
// status.loadBalancer through the status subresource (what a load balancer controller does).
func createSource(t *testing.T, c *cluster, r xdnsRecord) {
	t.Helper()
	obj := xdnsObject(r)
	var status client.Object
	switch o := obj.(type) {
	case *corev1.Service:
		status = xdnsService(r)
		o.Status = corev1.ServiceStatus{}
	case *networkingv1.Ingress:
		status = xdnsIngress(r)
		o.Status = networkingv1.IngressStatus{}
	}
	c.apply(t, obj)
	if status == nil {
		return
	}
	eventually(t, 20*time.Second, "status.loadBalancer of "+r.name, func() error {
		cur := status.DeepCopyObject().(client.Object)
		if err := c.C().Get(ctx(t), client.ObjectKeyFromObject(status), cur); err != nil {
			return err
		}
		switch s := cur.(type) {
		case *corev1.Service:
			s.Status = status.(*corev1.Service).Status
		case *networkingv1.Ingress:
			s.Status = status.(*networkingv1.Ingress).Status
		}
		return c.C().Status().Update(ctx(t), cur)
	})
}

// dnsplaneFor is a dnsplane DNSEndpoint with r's content, in the root zone's namespace: the
// claim of the other owner's name that must stay OwnershipConflict.
func dnsplaneFor(r xdnsRecord) *dnsv1.DNSEndpoint {
	return &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: platformNS, Name: "xdns-" + r.name},
		Spec: dnsv1.DNSEndpointSpec{PublishingSpec: dnsv1.PublishingSpec{Endpoints: []dnsv1.Endpoint{{
			DNSName: r.fqdn(), RecordType: r.typ, RecordTTL: dnsv1.TTL(r.ttl), Targets: r.targets,
		}}}}}
}

// installExternalDNSCRD creates external-dns' own DNSEndpoint CRD (bin/external-dns-crd.yaml) in c
// and waits until it is served.
func installExternalDNSCRD(t *testing.T, c *cluster) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(suite.repo, "bin", "external-dns-crd.yaml"))
	if err != nil {
		t.Fatalf("%v (make e2e builds it: hack/bench/build-external-dns.sh)", err)
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &crd.Object); err != nil {
		t.Fatalf("external-dns CRD: %v", err)
	}
	if err := c.C().Create(ctx(t), crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create external-dns CRD: %v", err)
	}
	eventually(t, 30*time.Second, "external-dns' DNSEndpoint CRD served", func() error {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion("externaldns.k8s.io/v1alpha1")
		l.SetKind("DNSEndpointList")
		return c.C().List(ctx(t), l)
	})
}

// runExternalDNS runs real external-dns once (--once: one sync, then it exits) against c's API
// server and the suite's PowerDNS, as owner, with sources (--source and its filters), the TXT
// registry and --policy=sync. Its output goes to <work dir>/external-dns-<owner>.log; the
// PowerDNS key goes in its environment (external-dns masks it when it logs its config).
func runExternalDNS(t *testing.T, c *cluster, owner string, sources ...string) {
	t.Helper()
	bin := filepath.Join(suite.repo, "bin", "external-dns")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%v (make e2e builds it: hack/bench/build-external-dns.sh)", err)
	}
	metrics, err := ports.Free()
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(suite.root, "external-dns-"+owner+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append(slices.Clone(sources), "--crd-source-apiversion=externaldns.k8s.io/v1alpha1", "--crd-source-kind=DNSEndpoint",
		"--provider=pdns", "--pdns-server="+suite.pdns.APIURL, "--registry=txt", "--txt-owner-id="+owner, "--policy=sync",
		"--kubeconfig="+c.kcfg, "--metrics-address=127.0.0.1:"+fmt.Sprint(metrics), "--once")
	cmd := exec.CommandContext(cctx, bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "EXTERNAL_DNS_PDNS_API_KEY="+suite.pdns.Key) // off the command line
	if err := cmd.Run(); err != nil {
		t.Fatalf("external-dns --once (owner %s): %v\n%s", owner, err, tail(logPath, 30))
	}
}

// linesAt returns the AXFR lines whose owner is one of names (FQDNs with the trailing dot).
func linesAt(lines []string, names ...string) []string {
	var out []string
	for _, l := range lines {
		if slices.Contains(names, ownerName(l)) {
			out = append(out, l)
		}
	}
	return out
}

// xdnsRegistryNames returns the owner names of the AXFR's TXT records whose value is an
// external-dns registry value of owner.
func xdnsRegistryNames(lines []string, owner string) []string {
	var out []string
	for _, l := range lines {
		if strings.Contains(l, " TXT ") && strings.Contains(l, "heritage=external-dns") && strings.Contains(l, "external-dns/owner="+owner+",") {
			out = append(out, ownerName(l))
		}
	}
	return out
}

// TestExternalDNSTakeover: external-dns v0.22.0 of owner extdns-e2e (--source=service,ingress,crd
// --registry=txt --policy=sync) publishes 3 Services, 3 Ingresses and 3 of its DNSEndpoints under
// xdns.e2e.test on PowerDNS, and owner extdns-other a fourth kind of name; external-dns stops.
// Cluster 1's manager restarts with the same sources and filters and
// --adopt-external-dns-owner=extdns-e2e: it derives the 9 names from the same objects and takes
// them over (dnsplane's registry records written, external-dns' removed), while a query loop asking
// every name every 50 ms sees no missing or wrong answer. The other owner's records are untouched
// (and a dnsplane claim of its name is OwnershipConflict). Deleting one Service and one Ingress
// removes their records and nothing else.
func TestExternalDNSTakeover(t *testing.T) {
	onFailure(t)
	if !suite.local {
		t.Skip("restarts cluster 1's manager with --adopt-external-dns-owner: local clusters only")
	}
	platform(t)
	c := suite.clusters[0]
	before := publishWithExternalDNS(t, c)
	all := append(slices.Clone(xdnsTaken), xdnsOther)
	var qs []answerloop.Query
	for _, r := range all {
		qs = append(qs, answerloop.Query{Name: r.fqdn(), Type: r.qtype(), Allowed: []string{r.answer()}})
	}
	loop := answerloop.Start(t, suite.pdns.DNSAddr, qs, answerloop.Options{Interval: 50 * time.Millisecond})
	start := time.Now()
	c.kill(t)
	c.args = append(c.args, xdnsSources...)
	c.args = append(c.args, "--adopt-external-dns-owner="+xdnsOwner)
	c.restart(t)
	for _, r := range xdnsTaken {
		c.waitCondition(t, r.endpoint(), dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, 90*time.Second)
	}
	c.apply(t, dnsplaneFor(xdnsOther))
	cond, _ := c.waitCondition(t, dnsplaneFor(xdnsOther), dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonOwnershipConflict, 60*time.Second)
	if !strings.Contains(cond.Message, "external-dns owner "+xdnsOtherOwner) {
		t.Errorf("the other owner's name: conflict message %q does not name %s", cond.Message, xdnsOtherOwner)
	}
	var after []string
	eventually(t, 60*time.Second, "external-dns' registry records of "+xdnsOwner+" removed", func() error {
		after = axfrNormalized(t, suite.pdns.DNSAddr, rootZone)
		if got := xdnsRegistryNames(after, xdnsOwner); len(got) > 0 {
			return fmt.Errorf("still there: %v", got)
		}
		return nil
	})
	time.Sleep(time.Second) // a few more rounds of the loop after the switch
	loop.Stop()
	t.Logf("takeover: %d queries during the switch (%s, %d names every 50 ms), %d missing or wrong %v",
		loop.Queries.Load(), time.Since(start).Round(100*time.Millisecond), len(all), loop.Failures.Load(), loop.Examples())
	if loop.Failures.Load() != 0 || loop.Queries.Load() == 0 {
		t.Errorf("%d of %d answers missing or wrong during the switch: %v", loop.Failures.Load(), loop.Queries.Load(), loop.Examples())
	}
	checkTakenOver(t, before, after, c.ownerID)
	deleteSources(t, c, after)
}

// publishWithExternalDNS installs external-dns' CRD in c, creates the source objects, has real
// external-dns publish xdnsTaken as owner xdnsOwner and xdnsOther as xdnsOtherOwner, checks that
// PowerDNS serves them with the owners' registry records, and returns the root zone's AXFR then.
func publishWithExternalDNS(t *testing.T, c *cluster) (before []string) {
	t.Helper()
	installExternalDNSCRD(t, c)
	c.apply(t, namespace(xdnsOtherNS))
	for _, r := range xdnsTaken {
		createSource(t, c, r)
	}
	c.apply(t, xdnsSource(xdnsOtherNS, xdnsOther))
	runExternalDNS(t, c, xdnsOwner, xdnsSources...)
	runExternalDNS(t, c, xdnsOtherOwner, "--source=crd", "--namespace="+xdnsOtherNS, "--domain-filter="+rootZone)
	for _, r := range append(slices.Clone(xdnsTaken), xdnsOther) {
		eventually(t, 30*time.Second, r.fqdn()+" served as external-dns published it", func() error {
			resp, err := query(suite.pdns.DNSAddr, r.fqdn(), r.qtype())
			if err != nil || len(resp.Answer) == 0 {
				return fmt.Errorf("answer %v, err %v", resp, err)
			}
			return nil
		})
	}
	before = axfrNormalized(t, suite.pdns.DNSAddr, rootZone)
	log := filepath.Join(suite.root, "external-dns-"+xdnsOwner+".log")
	if got := xdnsRegistryNames(before, xdnsOwner); len(got) < len(xdnsTaken) {
		t.Fatalf("external-dns registry records of %s: %v, want %d or more (external-dns log %s)", xdnsOwner, got, len(xdnsTaken), log)
	}
	if got := xdnsRegistryNames(before, xdnsOtherOwner); len(got) == 0 {
		t.Fatalf("no external-dns registry record of %s", xdnsOtherOwner)
	}
	t.Logf("external-dns %s wrote its registry records at %v", xdnsOwner, xdnsRegistryNames(before, xdnsOwner))
	return before
}

// deleteSources deletes the first Service and the first Ingress: their record sets and registry
// records go, nothing else (after is the AXFR before the deletion). Then it deletes the other
// objects.
func deleteSources(t *testing.T, c *cluster, after []string) {
	t.Helper()
	gone := []xdnsRecord{xdnsTaken[0], xdnsTaken[3]}
	for _, r := range gone {
		if err := c.C().Delete(ctx(t), xdnsObject(r)); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range gone {
		eventually(t, 30*time.Second, r.fqdn()+" removed", func() error {
			if resp, err := query(suite.pdns.DNSAddr, r.fqdn(), r.qtype()); err != nil || len(resp.Answer) > 0 {
				return fmt.Errorf("answer %v, err %v", resp, err)
			}
			return nil
		})
	}
	final := axfrNormalized(t, suite.pdns.DNSAddr, rootZone)
	checkRemoved(t, after, final, gone)
	for _, r := range xdnsTaken {
		if err := c.C().Delete(ctx(t), xdnsObject(r)); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	}
	if err := c.C().Delete(ctx(t), dnsplaneFor(xdnsOther)); err != nil && !apierrors.IsNotFound(err) {
		t.Error(err)
	}
}

// checkRemoved checks that from after to final exactly gone's records went: their targets and
// their registry records, nothing else, and nothing was added.
func checkRemoved(t *testing.T, after, final []string, gone []xdnsRecord) {
	t.Helper()
	removed, added := diff(after, final)
	if len(added) > 0 {
		t.Errorf("deleting %v added records: %v", gone, added)
	}
	want := 0
	for _, r := range gone {
		want += 1 + len(r.targets)
	}
	for _, l := range removed {
		if !slices.ContainsFunc(gone, func(r xdnsRecord) bool {
			return ownerName(l) == dns.Fqdn(r.fqdn()) || strings.Contains(l, "resource=DNSEndpoint/"+platformNS+"/"+r.endpoint().Name+"&")
		}) {
			t.Errorf("deleting %v removed a record of something else: %s", gone, l)
		}
	}
	if len(removed) != want {
		t.Errorf("deleting %v removed %d records, want %d (their targets and registry records): %v", gone, len(removed), want, removed)
	}
}

// checkTakenOver compares the root zone before and after the takeover: the taken names carry the
// same records, one dnsplane registry record each (owner ownerID) and no external-dns one of the
// adopted owner; the other owner's name and registry record are unchanged.
func checkTakenOver(t *testing.T, before, after []string, ownerID string) {
	t.Helper()
	for _, r := range xdnsTaken {
		name := dns.Fqdn(r.fqdn())
		if b, a := linesAt(before, name), linesAt(after, name); !slices.Equal(b, a) {
			t.Errorf("%s changed in the takeover: %v -> %v", r.fqdn(), b, a)
		}
		var claims []string
		for _, l := range after {
			if strings.Contains(l, " TXT ") && strings.Contains(l, "heritage=dnsplane") && strings.Contains(l, "name="+r.fqdn()+"&") {
				claims = append(claims, l)
			}
		}
		if len(claims) != 1 || !strings.Contains(claims[0], "owner="+ownerID+"&") {
			t.Errorf("%s: dnsplane registry records after the takeover %v, want one of %s", r.fqdn(), claims, ownerID)
		}
	}
	if got := xdnsRegistryNames(after, xdnsOwner); len(got) > 0 {
		t.Errorf("external-dns registry records of %s left: %v", xdnsOwner, got)
	}
	var otherNames []string
	for _, l := range before {
		if strings.Contains(ownerName(l), xdnsOther.name+"."+xdnsDomain) {
			otherNames = append(otherNames, ownerName(l))
		}
	}
	if b, a := linesAt(before, otherNames...), linesAt(after, otherNames...); len(b) < 2 || !slices.Equal(b, a) {
		t.Errorf("the other owner's records changed: %v -> %v", b, a)
	}
}
