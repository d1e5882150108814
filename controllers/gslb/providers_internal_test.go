package gslb

import (
	"context"
	"errors"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/testclient"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// TestWeightedCapable_AsksTheGslbZonesProvider (phases tested with fakes of
// the small interfaces, no envtest): whether the Gslb writes weighted sets is what the provider of
// its DNSZone's Secret declares; a missing zone or Secret leaves the DNSEndpoint to report it
// (true), and the Secret asked is the zone's, in the zone's namespace.
func TestWeightedCapable_AsksTheGslbZonesProvider(t *testing.T) {
	s := runtime.NewScheme()
	if err := dnsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	zone := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: "dns", Name: "gslb"},
		Spec: dnsv1.DNSZoneSpec{Zone: "gslb.example.test", ProviderRef: dnsv1.SecretReference{Name: "creds"}}}
	g := &dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"},
		Spec: dnsv1.GslbSpec{ZoneRef: dnsv1.ZoneReference{Namespace: "dns", Name: "gslb"}}}
	resolved := func(weighted bool) provider.Resolved {
		return provider.Resolved{Provider: testclient.Capable{Caps: provider.Capabilities{WeightedRouting: weighted}}}
	}
	for _, tc := range []struct {
		name      string
		zoneThere bool
		providers *testclient.Providers
		want      bool
		asked     string
	}{
		{"weighted provider", true, &testclient.Providers{Res: resolved(true)}, true, "[dns/creds]"},
		{"provider without weighted routing", true, &testclient.Providers{Res: resolved(false)}, false, "[dns/creds]"},
		{"Secret missing", true, &testclient.Providers{Err: fmt.Errorf("secret: %w", provider.ErrProviderNotFound)}, true, "[dns/creds]"},
		{"zone missing", false, &testclient.Providers{Err: errors.New("not asked")}, true, "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(s)
			if tc.zoneThere {
				b = b.WithObjects(zone.DeepCopy())
			}
			r := &Reconciler{Client: b.Build(), Providers: tc.providers}
			if got := r.routingCapable(context.Background(), g, dnsv1.GslbWeighted); got != tc.want {
				t.Errorf("routingCapable(weighted) = %t, want %t", got, tc.want)
			}
			if got := fmt.Sprint(tc.providers.Asked()); got != tc.asked {
				t.Errorf("Secrets asked %s, want %s", got, tc.asked)
			}
		})
	}
}

// TestRoutingCapable_GeoAsksForGeoRouting: a geo Gslb writes geo sets only where the
// provider declares GeoRouting; weighted routing alone is not enough.
func TestRoutingCapable_GeoAsksForGeoRouting(t *testing.T) {
	s := runtime.NewScheme()
	if err := dnsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	zone := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: "dns", Name: "gslb"},
		Spec: dnsv1.DNSZoneSpec{Zone: "gslb.example.test", ProviderRef: dnsv1.SecretReference{Name: "creds"}}}
	g := &dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "dns", Name: "web"},
		Spec: dnsv1.GslbSpec{ZoneRef: dnsv1.ZoneReference{Name: "gslb"}}}
	for _, tc := range []struct {
		caps provider.Capabilities
		want bool
	}{
		{provider.Capabilities{WeightedRouting: true, GeoRouting: true}, true},
		{provider.Capabilities{WeightedRouting: true}, false},
		{provider.Capabilities{}, false},
	} {
		r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(s).WithObjects(zone.DeepCopy()).Build(),
			Providers: &testclient.Providers{Res: provider.Resolved{Provider: testclient.Capable{Caps: tc.caps}}}}
		if got := r.routingCapable(context.Background(), g, dnsv1.GslbGeo); got != tc.want {
			t.Errorf("%+v: routingCapable(geo) = %t, want %t", tc.caps, got, tc.want)
		}
	}
}
