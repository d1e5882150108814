package gslb

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

func healthyLocal(targets []string, hosts ...string) *local {
	l := &local{hosts: hosts, targets: targets, health: map[string]dnsv1.ServiceHealth{}, why: map[string]string{}}
	for _, h := range hosts {
		l.health[h] = dnsv1.ServiceHealthy
	}
	return l
}

func TestPlanRecords_StrategyAnswersAndStatus(t *testing.T) {
	rr := dnsv1.GslbSpec{Strategy: dnsv1.GslbStrategy{Type: dnsv1.GslbRoundRobin}}
	weighted := dnsv1.GslbSpec{Strategy: dnsv1.GslbStrategy{Type: dnsv1.GslbWeighted, Weights: map[string]int32{"eu": 1, "us": 3}, DNSTTLSeconds: 60}}
	geoSpec := dnsv1.GslbSpec{Strategy: dnsv1.GslbStrategy{Type: dnsv1.GslbGeo, DefaultGeoTag: "eu",
		GeoRegions: map[string]string{"DE": "eu", "FR": "eu", "continent:NA": "us", "203.0.113.0/24": "ap"}}}
	geoPS := func(tag, regions string, dflt bool) dnsv1.ProviderSpecific {
		ps := dnsv1.ProviderSpecific{{Name: "dnsplane.io/geo-tag", Value: tag}}
		if dflt {
			ps = append(ps, dnsv1.ProviderSpecificProperty{Name: "dnsplane.io/geo-default", Value: "true"})
		}
		return append(ps, dnsv1.ProviderSpecificProperty{Name: "dnsplane.io/geo-regions", Value: regions})
	}
	unhealthy := healthyLocal([]string{"192.0.2.1"}, "app.example.com")
	unhealthy.health["app.example.com"], unhealthy.why["app.example.com"] = dnsv1.ServiceUnhealthy, "app.example.com: no ready endpoint"
	tests := []struct {
		name    string
		in      planInput
		eps     []dnsv1.Endpoint
		healthy map[string][]string
		any     bool
		unwell  []string
		err     bool
	}{
		{
			name: "roundRobin merges peers' targets; TTL defaults to 30",
			in: planInput{GeoTag: "eu", Spec: rr, Capable: true, Local: healthyLocal([]string{"192.0.2.1", "2001:db8::1"}, "app.example.com"),
				PeerTargets: map[string]map[string][]string{"app.example.com": {"us": {"192.0.2.2"}}}},
			eps: []dnsv1.Endpoint{
				{DNSName: "localtargets-app.example.com", RecordType: "A", RecordTTL: 30, Targets: dnsv1.Targets{"192.0.2.1"}},
				{DNSName: "localtargets-app.example.com", RecordType: "AAAA", RecordTTL: 30, Targets: dnsv1.Targets{"2001:db8::1"}},
				{DNSName: "app.example.com", RecordType: "A", RecordTTL: 30, Targets: dnsv1.Targets{"192.0.2.1", "192.0.2.2"}},
				{DNSName: "app.example.com", RecordType: "AAAA", RecordTTL: 30, Targets: dnsv1.Targets{"2001:db8::1"}},
			},
			healthy: map[string][]string{"app.example.com": {"192.0.2.1", "192.0.2.2", "2001:db8::1"}},
			any:     true,
		},
		{
			name: "weighted and capable: one weighted set per geo tag",
			in: planInput{GeoTag: "eu", Spec: weighted, Capable: true, Local: healthyLocal([]string{"192.0.2.1"}, "app.example.com"),
				PeerTargets: map[string]map[string][]string{"app.example.com": {"us": {"192.0.2.2"}}}},
			eps: []dnsv1.Endpoint{
				{DNSName: "localtargets-app.example.com", RecordType: "A", RecordTTL: 60, Targets: dnsv1.Targets{"192.0.2.1"}},
				{DNSName: "app.example.com", RecordType: "A", RecordTTL: 60, Targets: dnsv1.Targets{"192.0.2.1"}, SetIdentifier: "eu",
					ProviderSpecific: dnsv1.ProviderSpecific{{Name: "aws/weight", Value: "1"}}},
				{DNSName: "app.example.com", RecordType: "A", RecordTTL: 60, Targets: dnsv1.Targets{"192.0.2.2"}, SetIdentifier: "us",
					ProviderSpecific: dnsv1.ProviderSpecific{{Name: "aws/weight", Value: "3"}}},
			},
			healthy: map[string][]string{"app.example.com": {"192.0.2.1", "192.0.2.2"}},
			any:     true,
		},
		{
			name: "weighted, not capable: only localtargets, served targets still reported",
			in:   planInput{GeoTag: "eu", Spec: weighted, Local: healthyLocal([]string{"192.0.2.1"}, "app.example.com")},
			eps: []dnsv1.Endpoint{
				{DNSName: "localtargets-app.example.com", RecordType: "A", RecordTTL: 60, Targets: dnsv1.Targets{"192.0.2.1"}},
			},
			healthy: map[string][]string{"app.example.com": {"192.0.2.1"}},
			any:     true,
		},
		{
			name: "geo and capable: one geo set per geo tag with its regions; ap silent gets the default's",
			in: planInput{GeoTag: "eu", Spec: geoSpec, Capable: true, Local: healthyLocal([]string{"192.0.2.1", "2001:db8::1"}, "app.example.com"),
				PeerTargets: map[string]map[string][]string{"app.example.com": {"us": {"198.51.100.1"}, "ap": nil}}},
			eps: []dnsv1.Endpoint{
				{DNSName: "localtargets-app.example.com", RecordType: "A", RecordTTL: 30, Targets: dnsv1.Targets{"192.0.2.1"}},
				{DNSName: "localtargets-app.example.com", RecordType: "AAAA", RecordTTL: 30, Targets: dnsv1.Targets{"2001:db8::1"}},
				{DNSName: "app.example.com", RecordType: "A", RecordTTL: 30, Targets: dnsv1.Targets{"192.0.2.1"}, SetIdentifier: "ap", ProviderSpecific: geoPS("ap", "203.0.113.0/24", false)},
				{DNSName: "app.example.com", RecordType: "AAAA", RecordTTL: 30, Targets: dnsv1.Targets{"2001:db8::1"}, SetIdentifier: "ap", ProviderSpecific: geoPS("ap", "203.0.113.0/24", false)},
				{DNSName: "app.example.com", RecordType: "A", RecordTTL: 30, Targets: dnsv1.Targets{"192.0.2.1"}, SetIdentifier: "eu", ProviderSpecific: geoPS("eu", "DE FR", true)},
				{DNSName: "app.example.com", RecordType: "AAAA", RecordTTL: 30, Targets: dnsv1.Targets{"2001:db8::1"}, SetIdentifier: "eu", ProviderSpecific: geoPS("eu", "DE FR", true)},
				{DNSName: "app.example.com", RecordType: "A", RecordTTL: 30, Targets: dnsv1.Targets{"198.51.100.1"}, SetIdentifier: "us", ProviderSpecific: geoPS("us", "continent:NA", false)},
				{DNSName: "app.example.com", RecordType: "AAAA", RecordTTL: 30, Targets: dnsv1.Targets{"2001:db8::1"}, SetIdentifier: "us", ProviderSpecific: geoPS("us", "continent:NA", false)},
			},
			healthy: map[string][]string{"app.example.com": {"192.0.2.1", "198.51.100.1", "2001:db8::1"}},
			any:     true,
		},
		{
			name: "geo, not capable: only localtargets",
			in:   planInput{GeoTag: "eu", Spec: geoSpec, Local: healthyLocal([]string{"192.0.2.1"}, "app.example.com")},
			eps: []dnsv1.Endpoint{
				{DNSName: "localtargets-app.example.com", RecordType: "A", RecordTTL: 30, Targets: dnsv1.Targets{"192.0.2.1"}},
			},
			healthy: map[string][]string{"app.example.com": {"192.0.2.1"}},
			any:     true,
		},
		{
			name:    "geo without a default geo tag (stored past admission): an error",
			in:      planInput{GeoTag: "eu", Spec: dnsv1.GslbSpec{Strategy: dnsv1.GslbStrategy{Type: dnsv1.GslbGeo, GeoRegions: map[string]string{"DE": "eu"}}}, Capable: true, Local: healthyLocal([]string{"192.0.2.1"}, "app.example.com")},
			eps:     []dnsv1.Endpoint{{DNSName: "localtargets-app.example.com", RecordType: "A", RecordTTL: 30, Targets: dnsv1.Targets{"192.0.2.1"}}},
			healthy: map[string][]string{},
			err:     true,
		},
		{
			name: "no strategy (a Gslb stored under an older CRD without defaults): roundRobin, TTL 30",
			in: planInput{GeoTag: "eu", Spec: dnsv1.GslbSpec{}, Capable: true, Local: healthyLocal([]string{"192.0.2.1"}, "app.example.com"),
				PeerTargets: map[string]map[string][]string{"app.example.com": {"us": {"192.0.2.2"}}}},
			eps: []dnsv1.Endpoint{
				{DNSName: "localtargets-app.example.com", RecordType: "A", RecordTTL: 30, Targets: dnsv1.Targets{"192.0.2.1"}},
				{DNSName: "app.example.com", RecordType: "A", RecordTTL: 30, Targets: dnsv1.Targets{"192.0.2.1", "192.0.2.2"}},
			},
			healthy: map[string][]string{"app.example.com": {"192.0.2.1", "192.0.2.2"}},
			any:     true,
		},
		{
			name:    "unhealthy here, no peers: nothing served, the reason kept",
			in:      planInput{GeoTag: "eu", Spec: rr, Capable: true, Local: unhealthy},
			healthy: map[string][]string{},
			unwell:  []string{"app.example.com: no ready endpoint"},
		},
		{
			name:    "invalid strategy: an error, no answer endpoint for the host",
			in:      planInput{GeoTag: "eu", Spec: dnsv1.GslbSpec{Strategy: dnsv1.GslbStrategy{Type: "nearest"}}, Capable: true, Local: healthyLocal([]string{"192.0.2.1"}, "app.example.com")},
			eps:     []dnsv1.Endpoint{{DNSName: "localtargets-app.example.com", RecordType: "A", RecordTTL: 30, Targets: dnsv1.Targets{"192.0.2.1"}}},
			healthy: map[string][]string{},
			err:     true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := planRecords(tc.in)
			if (p.StrategyErr != nil) != tc.err {
				t.Fatalf("StrategyErr = %v, want error %v", p.StrategyErr, tc.err)
			}
			if !reflect.DeepEqual(p.Endpoints, tc.eps) {
				t.Fatalf("Endpoints =\n%+v\nwant\n%+v", p.Endpoints, tc.eps)
			}
			if !reflect.DeepEqual(p.HealthyRecords, tc.healthy) {
				t.Fatalf("HealthyRecords = %v, want %v", p.HealthyRecords, tc.healthy)
			}
			if p.AnyTargets != tc.any || !reflect.DeepEqual(p.Unhealthy, tc.unwell) {
				t.Fatalf("AnyTargets, Unhealthy = %v, %v; want %v, %v", p.AnyTargets, p.Unhealthy, tc.any, tc.unwell)
			}
			for h, s := range p.HealthyRecords {
				if p.Served[h] != len(s) {
					t.Fatalf("Served[%s] = %d, want %d", h, p.Served[h], len(s))
				}
			}
		})
	}
}

func TestPlanRecords_MissingResourceWithoutHostsIsNotFound(t *testing.T) {
	in := planInput{GeoTag: "eu", Spec: dnsv1.GslbSpec{ResourceRef: dnsv1.ResourceReference{Kind: dnsv1.ResourceKindIngress, Name: "web"}},
		Local: &local{missing: "Ingress apps/web does not exist"}}
	p := planRecords(in)
	if got := p.ServiceHealth["Ingress/web"]; got != dnsv1.ServiceNotFound {
		t.Fatalf("ServiceHealth[Ingress/web] = %q, want NotFound (all: %v)", got, p.ServiceHealth)
	}
}

func TestReadyCondition_FirstMatchWins(t *testing.T) {
	failed := &metav1.Condition{Type: dnsv1.ConditionReady, Status: metav1.ConditionFalse, Reason: dnsv1.ReasonZoneNotFound, Message: "gone"}
	tests := []struct {
		name   string
		in     readyInput
		ok     bool
		reason string
		msg    string // a substring
	}{
		{"not capable", readyInput{ZoneName: "z", EndpointReady: failed}, false, dnsv1.ReasonNotCapable, "provider of DNSZone z"},
		{"endpoint zone not found", readyInput{Capable: true, EndpointName: "app-gslb", EndpointReady: failed}, false, dnsv1.ReasonZoneNotFound, "DNSEndpoint app-gslb: ZoneNotFound: gone"},
		{"endpoint refused by another namespace's zone", readyInput{Capable: true, EndpointName: "app-gslb", EndpointReady: &metav1.Condition{Type: dnsv1.ConditionReady, Status: metav1.ConditionFalse, Reason: dnsv1.ReasonDelegationNotAllowed, Message: "not published"}},
			false, dnsv1.ReasonDelegationNotAllowed, "DNSEndpoint app-gslb: DelegationNotAllowed: not published"},
		{"endpoint refused by the provider (a geo CIDR region on Route 53)", readyInput{Capable: true, EndpointName: "app-gslb", EndpointReady: &metav1.Condition{Type: dnsv1.ConditionReady, Status: metav1.ConditionFalse, Reason: dnsv1.ReasonNotCapable, Message: "CIDR"}},
			false, dnsv1.ReasonNotCapable, "DNSEndpoint app-gslb: NotCapable: CIDR"},
		{"endpoint waiting for its zone", readyInput{Capable: true, EndpointName: "app-gslb", EndpointReady: &metav1.Condition{Type: dnsv1.ConditionReady, Status: metav1.ConditionFalse, Reason: dnsv1.ReasonAwaitingZone, Message: "waiting for zone gslb.example.test"}},
			false, dnsv1.ReasonAwaitingZone, "DNSEndpoint app-gslb: AwaitingZone: waiting for zone gslb.example.test"},
		{"endpoint failed otherwise", readyInput{Capable: true, EndpointName: "app-gslb", EndpointReady: &metav1.Condition{Type: dnsv1.ConditionReady, Status: metav1.ConditionFalse, Reason: dnsv1.ReasonOwnershipConflict, Message: "held"}},
			false, dnsv1.ReasonProviderError, "DNSEndpoint app-gslb: OwnershipConflict: held"},
		{"endpoint other failure", readyInput{Capable: true, EndpointReady: &metav1.Condition{Status: metav1.ConditionFalse, Reason: "Throttled"}}, false, dnsv1.ReasonProviderError, ": Throttled: "},
		{"endpoint pending Published is not a failure", readyInput{Capable: true, AnyTargets: true, Hosts: 1, EndpointReady: &metav1.Condition{Status: metav1.ConditionFalse, Reason: dnsv1.ReasonPublished}}, true, dnsv1.ReasonPublished, "1 hosts published"},
		{"missing, peers still serve", readyInput{Capable: true, Missing: "Service apps/web does not exist", AnyTargets: true}, false, dnsv1.ReasonResourceNotFound, "this cluster serves no targets; peers' targets are still published"},
		{"no targets anywhere", readyInput{Capable: true, Unhealthy: []string{"a: why"}}, false, dnsv1.ReasonNoHealthyTargets, "no cluster has healthy targets; here: a: why"},
		{"peer errors", readyInput{Capable: true, AnyTargets: true, PeerErrors: []string{"us (x): timeout"}}, false, dnsv1.ReasonPeerErrors, "us (x): timeout"},
		{"published", readyInput{Capable: true, AnyTargets: true, Hosts: 2, Unhealthy: []string{"b: why"}}, true, dnsv1.ReasonPublished, "2 hosts published; here: b: why"},
		{"geo on a provider without geo routing", readyInput{Strategy: "geo", ZoneName: "gslb", AnyTargets: true}, false, dnsv1.ReasonNotCapable, "strategy geo needs geo routing, which the provider of DNSZone gslb does not have"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason, msg := readyCondition(tc.in)
			if ok != tc.ok || reason != tc.reason || !strings.Contains(msg, tc.msg) {
				t.Fatalf("readyCondition = %v %s %q, want %v %s containing %q", ok, reason, msg, tc.ok, tc.reason, tc.msg)
			}
		})
	}
}

func TestPeerErrors_DiscoveryFirstThenEachFailedPeer(t *testing.T) {
	got := peerErrors(errors.New("no DNS server"), []dnsv1.PeerStatus{{GeoTag: "us", Address: "192.0.2.2:53", Error: "timeout"}, {GeoTag: "ap", Address: "192.0.2.3:53"}})
	want := []string{"discovering peers from the edge NS set: no DNS server", "us (192.0.2.2:53): timeout"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("peerErrors = %q, want %q", got, want)
	}
}

func TestHostHealth_BackendsEndpointsAndAddress(t *testing.T) {
	for _, tc := range []struct {
		name     string
		backends []string
		ready    map[string]int
		targets  bool
		want     dnsv1.ServiceHealth
		why      string
	}{
		{"no backend", nil, nil, true, dnsv1.ServiceNotFound, "h: no backend Service"},
		{"every backend missing", []string{"a", "b"}, map[string]int{}, true, dnsv1.ServiceNotFound, "h: backend Service a, b not found"},
		{"no ready endpoint", []string{"a", "b"}, map[string]int{"a": 0}, true, dnsv1.ServiceUnhealthy, "h: no ready endpoints in Service a, b"},
		{"ready but no address", []string{"a"}, map[string]int{"a": 2}, false, dnsv1.ServiceUnhealthy, "h: ready endpoints but no load-balancer address on Service web"},
		{"healthy: one backend live is enough", []string{"a", "b"}, map[string]int{"b": 1}, true, dnsv1.ServiceHealthy, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := hostHealth("h", tc.backends, tc.ready, tc.targets, "Service web")
			if got != tc.want || why != tc.why {
				t.Fatalf("hostHealth = %s %q, want %s %q", got, why, tc.want, tc.why)
			}
		})
	}
}
