package gslb

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

// TestReadLocal_ServiceHealthFromItsEndpointSlices reads through controller-runtime's fake
// client: a LoadBalancer Service with a ready endpoint is Healthy at its address; once the
// Service is gone every host is NotFound with the resource named.
func TestReadLocal_ServiceHealthFromItsEndpointSlices(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := dnsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "192.0.2.10"}}}}}
	yes := true
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &yes}}}}
	gs := func() *dnsv1.Gslb {
		return &dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"},
			Spec: dnsv1.GslbSpec{Hosts: []string{"app.example.test"}, ResourceRef: dnsv1.ResourceReference{Kind: dnsv1.ResourceKindService, Name: "web"}}}
	}
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(svc, slice).Build()
	l, err := readLocal(ctx, c, nil, gs(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.hosts) != 1 || l.health[l.hosts[0]] != dnsv1.ServiceHealthy || len(l.healthy(l.hosts[0])) != 1 || l.healthy(l.hosts[0])[0] != "192.0.2.10" || l.missing != "" {
		t.Fatalf("local = %+v, want one Healthy host at 192.0.2.10", l)
	}
	gone := fake.NewClientBuilder().WithScheme(s).Build()
	l, err = readLocal(ctx, gone, nil, gs(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if l.missing != "Service apps/web does not exist" || l.health[l.hosts[0]] != dnsv1.ServiceNotFound {
		t.Fatalf("local = %+v, want the Service missing and the host NotFound", l)
	}
}
