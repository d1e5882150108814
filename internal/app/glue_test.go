package app_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gluecontroller "github.com/dnsplane/dnsplane/controllers/glue"
	"github.com/dnsplane/dnsplane/internal/app"
	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	"github.com/dnsplane/dnsplane/internal/testing/envtest"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// glueAt returns the addresses addr answers for ns1.<zone> A and AAAA, sorted.
func glueAt(addr, zone string) ([]string, error) {
	var out []string
	for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA} {
		resp, err := dnstest.Exchange(addr, "ns1."+zone, qt)
		if err != nil {
			return nil, err
		}
		for _, rr := range resp.Answer {
			out = append(out, provider.TargetFromRR(rr))
		}
	}
	slices.Sort(out)
	return out, nil
}

// glueFollows waits until every zone's ns1 glue, as addr answers it, is want. The deadline only
// catches a hang: the zone resync is an hour, so only the Service's watch can do it.
func glueFollows(t *testing.T, addr, what string, want []string, zones ...string) {
	t.Helper()
	testrun.Eventually(t, time.Minute, what, func() error {
		for _, z := range zones {
			got, err := glueAt(addr, z)
			if err != nil {
				return err
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("%s: ns1 glue %v, want %v", z, got, want)
			}
		}
		return nil
	})
}

// recreate deletes the dns Service and creates it again as a ClusterIP Service with another
// cluster IP (the next free address after the old one, in its /24), as an uninstall and reinstall does. It
// returns the new Service.
func recreate(t *testing.T, c client.Client, old *corev1.Service) *corev1.Service {
	t.Helper()
	ctx := context.Background()
	if err := c.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	testrun.Eventually(t, time.Minute, "the dns Service gone", func() error {
		err := c.Get(ctx, client.ObjectKeyFromObject(old), &corev1.Service{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %v", err)
	})
	// The next free address of the old one's /24 (envtest's service range, 10.0.0.0/24), wrapping
	// round after .254: the old address may be the range's last (a CI run's was .254).
	first := netip.MustParseAddr(old.Spec.ClusterIP)
	subnet := netip.PrefixFrom(first, 24).Masked()
	ip := first
	for range 253 {
		if ip = ip.Next(); !subnet.Contains(ip.Next()) { // past .254: .255 is the broadcast address
			ip = subnet.Addr().Next()
		}
		if ip == first {
			break
		}
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: old.Namespace, Name: old.Name},
			Spec: corev1.ServiceSpec{Selector: old.Spec.Selector, ClusterIP: ip.String(),
				Ports: []corev1.ServicePort{{Name: "dns-udp", Port: 53, Protocol: corev1.ProtocolUDP}}}}
		err := c.Create(ctx, svc)
		if err == nil {
			return svc
		}
		if !apierrors.IsInvalid(err) && !apierrors.IsAlreadyExists(err) { // an allocated IP: try the next
			t.Fatal(err)
		}
	}
	t.Fatalf("no free cluster IP after %s", old.Spec.ClusterIP)
	return nil
}

// updateService changes the dns Service's spec (and its status, when status is set) with
// conflicts retried.
func updateService(t *testing.T, c client.Client, key client.ObjectKey, spec func(*corev1.Service), status func(*corev1.Service)) *corev1.Service {
	t.Helper()
	ctx := context.Background()
	var svc corev1.Service
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, key, &svc); err != nil {
			return err
		}
		if spec != nil {
			spec(&svc)
			if err := c.Update(ctx, &svc); err != nil {
				return err
			}
		}
		if status != nil {
			status(&svc)
			return c.Status().Update(ctx, &svc)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return &svc
}

// warned waits for a Warning Event with that reason on the dns Service.
func warned(t *testing.T, c client.Client, svc *corev1.Service, reason string) {
	t.Helper()
	testrun.Eventually(t, time.Minute, "a "+reason+" Event on the dns Service", func() error {
		var evs corev1.EventList
		if err := c.List(context.Background(), &evs, client.InNamespace(svc.Namespace)); err != nil {
			return err
		}
		var seen []string
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "Service" && e.InvolvedObject.Name == svc.Name && e.Reason == reason && e.Type == corev1.EventTypeWarning {
				return nil
			}
			seen = append(seen, e.Reason)
		}
		return fmt.Errorf("Events in %s: %v", svc.Namespace, seen)
	})
}

// TestGlue_FollowsTheDNSService: the glue of ns1.<zone> in
// every zone follows the dns Service (--local-dns-service), through its watch, not a restart:
//   - the Service deleted and created again with another cluster IP (an uninstall and
//     reinstall), while the manager runs, and again while it is stopped (a restart mends it);
//   - its type switched to NodePort: the cluster IP stays the glue;
//   - a LoadBalancer with ingress IPs: they are the glue, of zones created afterwards too;
//   - a load balancer that reports only a hostname (an AWS NLB): the cluster IP, and a
//     GlueIsClusterIP Warning Event on the Service says so.
func TestGlue_FollowsTheDNSService(t *testing.T) {
	usableLoopback(t, "127.0.0.33")
	cfg := envtest.Start(t, "../..")
	svc := dnsService(t, cfg)
	admin, err := client.New(cfg, client.Options{Scheme: app.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	r := startReplica(t, cfg, "127.0.0.33")
	leaderOf(t, r)
	zones := []string{"one.test", "two.test"}
	for _, z := range zones {
		ensureZone(t, r, z)
	}
	glueFollows(t, r.addr, "the glue is the cluster IP", []string{svc.Spec.ClusterIP}, zones...)

	svc = recreate(t, admin, svc)
	glueFollows(t, r.addr, "the glue follows a re-created Service", []string{svc.Spec.ClusterIP}, zones...)

	// A restart mends what changed while the manager was stopped.
	r.stop()
	svc = recreate(t, admin, svc)
	r = startReplica(t, cfg, "127.0.0.33")
	leaderOf(t, r)
	glueFollows(t, r.addr, "the glue follows a Service re-created while the manager was stopped", []string{svc.Spec.ClusterIP}, zones...)

	key := client.ObjectKeyFromObject(svc)
	updateService(t, admin, key, func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }, nil)
	ensureZone(t, r, "three.test")
	zones = append(zones, "three.test")
	glueFollows(t, r.addr, "a NodePort Service's glue is its cluster IP", []string{svc.Spec.ClusterIP}, zones...)

	updateService(t, admin, key, func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer },
		func(s *corev1.Service) {
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.53"}, {IP: "2001:db8::53"}}
		})
	glueFollows(t, r.addr, "the glue follows the load balancer's ingress IPs", []string{"2001:db8::53", "203.0.113.53"}, zones...)
	ensureZone(t, r, "four.test")
	zones = append(zones, "four.test")
	glueFollows(t, r.addr, "a zone created now gets the load balancer's IPs", []string{"2001:db8::53", "203.0.113.53"}, "four.test")

	updateService(t, admin, key, nil, func(s *corev1.Service) {
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: "dns-0123456789.elb.eu-west-1.amazonaws.com"}}
	})
	glueFollows(t, r.addr, "a hostname-only load balancer's glue is the cluster IP", []string{svc.Spec.ClusterIP}, zones...)
	warned(t, admin, svc, gluecontroller.ReasonGlueIsClusterIP)
}

// ensureZone creates zone in the local provider through replica r.
func ensureZone(t *testing.T, r *replica, zone string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := r.a.Local.EnsureZone(ctx, provider.ZoneSpec{Name: zone, CallerReference: "glue-" + strings.ReplaceAll(zone, ".", "-")}); err != nil {
		t.Fatal(err)
	}
}
