package controllers_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/clouddnsfake"
	"github.com/dnsplane/dnsplane/internal/testing/route53fake"
	"github.com/dnsplane/dnsplane/pkg/geo"
)

// addPlainName adds the plain name other.<zone> A to ep's geo endpoints (geoEndpoints), waits
// until published says the provider holds it, lets any write that would follow happen, and
// returns the sum and the list of the write sizes (sizes: the fake's batches or changes) since.
func addPlainName(t *testing.T, ep *dnsv1.DNSEndpoint, zone string, sizes func() []int, published func() bool) (int, []int) {
	t.Helper()
	before := len(sizes())
	eps := append(geoEndpoints(zone), dnsv1.Endpoint{DNSName: "other." + zone, RecordType: "A", Targets: dnsv1.Targets{"192.0.2.9"}})
	cur := &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ep.Namespace, Name: ep.Name}}
	updateIn(t, k8s, cur, func() { cur.Spec.Endpoints = eps })
	eventually(t, 20*time.Second, "other published", func() error {
		if !published() {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	time.Sleep(time.Second) // any write that would follow
	since := sizes()[before:]
	sum := 0
	for _, n := range since {
		sum += n
	}
	return sum, since
}

// geoEndpoints are app.<zone>'s geo sets as the Gslb controller publishes them for
// {DE: eu, continent:NA: us}, default eu.
func geoEndpoints(zone string) []dnsv1.Endpoint {
	ep := func(tag, target string, s geo.Set) dnsv1.Endpoint {
		kv, _ := geo.EncodeLabels(s)
		var ps dnsv1.ProviderSpecific
		for _, p := range kv {
			ps = append(ps, dnsv1.ProviderSpecificProperty{Name: p[0], Value: p[1]})
		}
		return dnsv1.Endpoint{DNSName: "app." + zone, RecordType: "A", RecordTTL: 30, Targets: dnsv1.Targets{target}, SetIdentifier: tag, ProviderSpecific: ps}
	}
	return []dnsv1.Endpoint{
		ep("eu", "192.0.2.1", geo.Set{Tag: "eu", Regions: []string{"DE"}, Default: true}),
		ep("us", "192.0.2.2", geo.Set{Tag: "us", Regions: []string{"continent:NA"}}),
	}
}

// TestCloudFakes_GeoSets: geo sets published through a DNSEndpoint (the Gslb
// controller's path) land in Route 53 as geolocation record sets (country DE, continent NA, the
// default location "*"), and the next reconciles write nothing more: the listed sets fold back
// into the geo sets the plan wants. On Cloud DNS they land as one record set with a geo routing
// policy (an item per Google Cloud region), and converge the same way; a CIDR region there is
// refused as NotCapable, and its DNSEndpoint says so.
func TestCloudFakes_GeoSets(t *testing.T) {
	t.Run("route53", func(t *testing.T) {
		r53, c := startRoute53(t, "")
		ns, zone := "geo-route53", "geo-route53.cloud.test"
		z, ep := publishGeoSets(t, ns, zone, c.secretType, c.data)
		var got []string
		for _, r := range r53.RecordSets(z.Status.ZoneID) {
			if r.Name == "app."+zone+"." && r.Type == "A" {
				var loc route53fake.GeoLocation
				if r.GeoLocation != nil {
					loc = *r.GeoLocation
				}
				got = append(got, fmt.Sprintf("%s %s%s %s", r.SetIdentifier, loc.ContinentCode, loc.CountryCode, r.Records[0].Value))
			}
		}
		slices.Sort(got)
		want := []string{"eu/* * 192.0.2.1", "eu/DE DE 192.0.2.1", "us/continent:NA NA 192.0.2.2"}
		if !slices.Equal(got, want) {
			t.Fatalf("Route 53 holds %q, want %q", got, want)
		}
		// Converged: the next reconcile (a spec change adds a plain name) writes that name and
		// its registry record only. Rewriting the geo sets would DELETE and CREATE their three
		// geolocation record sets: 6 elements more.
		elements, batches := addPlainName(t, ep, zone, r53.BatchSizes, func() bool {
			return slices.ContainsFunc(r53.RecordSets(z.Status.ZoneID), func(r route53fake.RR) bool {
				return r.Name == "other."+zone+"." && r.Type == "A"
			})
		})
		if elements >= 6 {
			t.Fatalf("%d record elements written for one new plain name: the geo sets were rewritten (batches %v)", elements, batches)
		}
		t.Logf("Route 53: one new plain name cost %d record elements beside the published geo sets", elements)
	})
	t.Run("clouddns", func(t *testing.T) {
		fake, c := startCloudDNS(t)
		ns, zone := "geo-clouddns", "geo-clouddns.cloud.test"
		z, ep := publishGeoSets(t, ns, zone, c.secretType, c.data)
		items := map[string]string{} // location -> rrdatas
		for _, rs := range fake.RRSets("fake-project", z.Status.ZoneID) {
			if rs.Name == "app."+zone+"." && rs.Type == "A" && rs.RoutingPolicy != nil {
				for _, it := range rs.RoutingPolicy.Geo.Items {
					items[it.Location] = fmt.Sprint(it.Rrdatas)
				}
			}
		}
		// eu (DE, and the default) answers every Google Cloud region but North America's, us
		// those 12.
		us := 0
		for _, v := range items {
			if v == "[192.0.2.2]" {
				us++
			}
		}
		if len(items) != len(clouddnsfake.Regions()) || items["europe-west3"] != "[192.0.2.1]" || items["asia-northeast1"] != "[192.0.2.1]" ||
			items["us-east4"] != "[192.0.2.2]" || us != 12 {
			t.Fatalf("Cloud DNS holds the geo items %v", items)
		}
		// Converged: one new plain name costs its set and its registry record, not a rewrite
		// of the routing-policy set and its companion (2 deletions and 2 additions).
		sets, changes := addPlainName(t, ep, zone, fake.ChangeSizes, func() bool {
			return slices.ContainsFunc(fake.RRSets("fake-project", z.Status.ZoneID), func(rs clouddnsfake.RRSet) bool {
				return rs.Name == "other."+zone+"." && rs.Type == "A"
			})
		})
		if sets >= 4 {
			t.Fatalf("%d record sets written for one new plain name: the geo sets were rewritten (changes %v)", sets, changes)
		}
		// A CIDR region has no Cloud DNS location: the provider refuses it (NotCapable, as Route
		// 53 does), and that DNSEndpoint says so, naming the region.
		cidr := endpointObj(ns, "cidr", dnsv1.Endpoint{DNSName: "ap." + zone, RecordType: "A", RecordTTL: 30, Targets: dnsv1.Targets{"192.0.2.3"},
			SetIdentifier: "ap", ProviderSpecific: dnsv1.ProviderSpecific{{Name: geo.LabelTag, Value: "ap"}, {Name: geo.LabelRegions, Value: "203.0.113.0/24"}}})
		create(t, cidr)
		cond := waitCondition(t, cidr, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonNotCapable)
		if !strings.Contains(cond.Message, "203.0.113.0/24") || !strings.Contains(cond.Message, "CIDR") {
			t.Fatalf("a CIDR region on Cloud DNS: Ready says %q", cond.Message)
		}
	})
}

// publishGeoSets creates namespace ns with the provider Secret (secretType, data), a DNSZone
// for zone and a DNSEndpoint "app" with its geo sets, and waits until both are Ready.
func publishGeoSets(t *testing.T, ns, zone string, secretType corev1.SecretType, data map[string]string) (*dnsv1.DNSZone, *dnsv1.DNSEndpoint) {
	t.Helper()
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, secretObj(ns, "dns", secretType, data))
	z := zoneObj(ns, "z", zone, nil)
	ep := endpointObj(ns, "app", geoEndpoints(zone)...)
	create(t, z, ep)
	waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)
	return z, ep
}
