package controllers_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	"github.com/dnsplane/dnsplane/pkg/provider/counting"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
)

// TestScale_ProviderCallsPerZone pins the zone writer's budget (docs/design.md): 1,000
// DNSEndpoints of 10 endpoints each over 10 zones reach the provider with at most 1 read per zone,
// and with writes coalesced: at most one write per two objects of a zone (group commit sends the
// first submission alone and then one write per wave of arrivals, so the count depends on how
// spread out the reconciles reach the writer; one write per object, the failure this pins,
// exceeds it by 2x); changing 10 of them costs no read and at most one write per touched zone; with
// nothing changing there is no provider call.
func TestScale_ProviderCallsPerZone(t *testing.T) {
	if testing.Short() {
		t.Skip("scale test: skipped with -short")
	}
	const zones, objects, perObject = 10, scaleObjects, 10
	ns := namespace(t, "scale")
	zoneName := func(i int) string { return fmt.Sprintf("z%d.scale.test", i) }
	obj := func(i int, octet int) *dnsv1.DNSEndpoint {
		ep := endpointObj(ns, fmt.Sprintf("app%d", i))
		for j := range perObject {
			ep.Spec.Endpoints = append(ep.Spec.Endpoints, dnsv1.Endpoint{
				DNSName:    fmt.Sprintf("h%d-%d.%s", i, j, zoneName(i%zones)),
				RecordType: "A", Targets: dnsv1.Targets{fmt.Sprintf("10.%d.%d.%d", octet, i%250, j)},
			})
		}
		return ep
	}
	// The objects exist before their zones, as after an onboarding or a restart: once the
	// zones are available, all 1,000 reach the zone writers at once. (Created one by one, they
	// would reach them at the API server's write rate, which measures the API server.)
	var wg sync.WaitGroup
	errs := make(chan error, objects)
	for w := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < objects; i += 20 {
				if err := k8s.Create(ctxT(t), obj(i, 1)); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "all DNSEndpoints waiting for their zone", func() error {
		var list dnsv1.DNSEndpointList
		if err := k8s.List(ctxT(t), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		waiting := 0
		for _, ep := range list.Items {
			if c := meta.FindStatusCondition(ep.Status.Conditions, dnsv1.ConditionReady); c != nil && c.Reason == dnsv1.ReasonInvalidEndpoint {
				waiting++
			}
		}
		if waiting != objects {
			return fmt.Errorf("%d of %d report InvalidEndpoint", waiting, objects)
		}
		return nil
	})
	start := time.Now()
	for i := range zones {
		create(t, zoneObj(ns, fmt.Sprintf("z%d", i), zoneName(i), nil))
	}
	allReady := func() error { return allEndpointsReady(ctxT(t), k8s, ns, objects) }
	eventually(t, 3*time.Minute, "all DNSEndpoints Ready", allReady)
	elapsed := time.Since(start)
	for i := range zones {
		z := &dnsv1.DNSZone{}
		z.Namespace, z.Name = ns, fmt.Sprintf("z%d", i)
		if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(z), z); err != nil {
			t.Fatal(err)
		}
	}
	if r := dnstest.Ask(t, dnsAddr, fmt.Sprintf("h%d-9.%s", objects-1, zoneName((objects-1)%zones)), dns.TypeA); len(r.Answer) != 1 {
		t.Fatalf("last record not served: %v", r)
	}
	var reads, writes int
	for i := range zones {
		c := provider.ZoneCounts(local.ZoneID(zoneName(i)))
		reads += c[counting.OpListRecordSets]
		writes += c[counting.OpApplyChanges]
		if perZone := objects / zones; c[counting.OpListRecordSets] > 1 || c[counting.OpApplyChanges] > perZone/2 {
			t.Errorf("zone %s: %d reads, %d writes for %d objects; want <= 1 and <= %d", zoneName(i), c[counting.OpListRecordSets], c[counting.OpApplyChanges], perZone, perZone/2)
		}
	}
	t.Logf("first sync of %d endpoints in %d objects over %d zones, from zone creation to all Ready: %s, %d reads, %d writes", objects*perObject, objects, zones, elapsed.Round(time.Millisecond), reads, writes)

	// Change 10 objects, one per zone.
	provider.Reset()
	for i := range 10 {
		ep := &dnsv1.DNSEndpoint{}
		ep.Namespace, ep.Name = ns, fmt.Sprintf("app%d", i)
		update(t, ep, func() { ep.Spec.Endpoints[0].Targets = dnsv1.Targets{"192.0.2.99"} })
	}
	eventually(t, time.Minute, "changes served", func() error {
		for i := range 10 {
			r := dnstest.Ask(t, dnsAddr, fmt.Sprintf("h%d-0.%s", i, zoneName(i)), dns.TypeA)
			if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "192.0.2.99" {
				return fmt.Errorf("h%d-0 = %v", i, r.Answer)
			}
		}
		return nil
	})
	eventually(t, time.Minute, "all DNSEndpoints Ready after the change", allReady)
	for i := range zones {
		c := provider.ZoneCounts(local.ZoneID(zoneName(i)))
		if c[counting.OpListRecordSets] != 0 || c[counting.OpApplyChanges] > 1 {
			t.Errorf("zone %s after changing one object: %v; want 0 reads and <= 1 write", zoneName(i), c)
		}
	}

	// Nothing changes: no provider call for these zones.
	provider.Reset()
	time.Sleep(3 * time.Second)
	for i := range zones {
		if c := provider.ZoneCounts(local.ZoneID(zoneName(i))); len(c) != 0 {
			t.Errorf("zone %s called with nothing changing: %v", zoneName(i), c)
		}
	}
}
