package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

// The Gslb every member runs: host in zone gslbZone, namespace apps.
const (
	gslbZone = "gslb.test"
	gslbHost = "app." + gslbZone
	appNS    = "apps"
)

// applyObjects gives the member, through its local kubeconfig, its zone, a selector-less
// LoadBalancer Service whose load-balancer addresses are its two targets, a Ready
// EndpointSlice, and the failover Gslb (primary the run's primary) with a health check of
// protocol proto on the targets' port.
func applyObjects(ctx context.Context, n *node, w World, proto dnsv1.HealthCheckProtocol, port int) error {
	cl, err := kubeClient(n.kubeconfig())
	if err != nil {
		return err
	}
	m := w.Members[n.idx]
	hc := &dnsv1.GslbHealthCheck{Protocol: proto, Port: int32(port), IntervalSeconds: int32(n.timing.Interval / time.Second),
		TimeoutSeconds: int32(n.timing.Timeout / time.Second), FailureThreshold: int32(n.timing.Failure), SuccessThreshold: 1,
		IsolationHoldSeconds: ptr.To[int32](3600)}
	if proto != dnsv1.HealthCheckTCP {
		hc.Path = "/healthz"
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "app"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: appNS}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "dns"}, Type: "dnsplane.io/local"},
		&dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "gslb"},
			Spec: dnsv1.DNSZoneSpec{Zone: gslbZone, ProviderRef: dnsv1.SecretReference{Name: "dns"}}},
		svc,
		&discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: appNS, Name: "app-1", Labels: map[string]string{discoveryv1.LabelServiceName: "app"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.10"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		},
		&dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "app"}, Spec: dnsv1.GslbSpec{
			ResourceRef: dnsv1.ResourceReference{Kind: "Service", Name: "app"}, Hosts: []string{gslbHost},
			ZoneRef:     dnsv1.ZoneReference{Name: "gslb"},
			Strategy:    dnsv1.GslbStrategy{Type: "failover", PrimaryGeoTag: w.Members[w.Primary].Name, DNSTTLSeconds: 5},
			HealthCheck: hc}},
	}
	return retry(ctx, 2*time.Minute, func(ctx context.Context) error {
		for _, o := range objs {
			if err := cl.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("%s: create %T %s: %w", n.name, o, o.GetName(), err)
			}
		}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(svc), svc); err != nil {
			return err
		}
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: m.Addr[V4]}, {IP: m.Addr[V6]}}
		return cl.Status().Update(ctx, svc)
	})
}

// kubeClient is a client of the kubeconfig's API server.
func kubeClient(path string) (client.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 15 * time.Second
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := dnsv1.AddToScheme(s); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: s})
}

// retry calls f until it returns nil, ctx ends or within has passed, and returns its last error.
func retry(ctx context.Context, within time.Duration, f func(context.Context) error) error {
	deadline := time.Now().Add(within)
	for {
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err := f(cctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
}
