package controllers_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/conditions"
	"github.com/dnsplane/dnsplane/internal/testing/faultproxy"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
	dnsprovider "github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/factory"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

// cloudFaultBudget bounds the requests the manager sends a cloud through a whole scenario (a
// zone created, its records written, changed and partly deleted) per record wanted at the end:
// a bound on a count, never on a time, to catch a retry loop. The figures are in the log and in
// docs/reliability.md ("Cloud providers behind faultproxy").
const cloudFaultBudget = 12

// TestCloudFakes_ConvergeThroughFaults puts the fault proxy in front of each cloud fake:
// the manager reaches Route 53's, Cloud DNS's and Azure DNS's fake (API and, for Azure, token
// requests; Cloud DNS's token endpoint stays direct) through faultproxy, which answers a share of
// them with a fault, every kind in turn (faultproxy.Cycle over faultproxy.Faults: 500, 502, 503,
// 429 with and without Retry-After, a hang past --provider-request-timeout, a reset, a slow body,
// a reply lost after the fake applied the write), from the DNSZone's creation on. The DNSZone becomes Ready, with one hosted zone
// (a create whose reply was lost must find the zone it made, not make a second); foreign record
// sets are then seeded beside it (unowned, another dnsplane owner's with its registry record, an
// external-dns owner's with its TXT); ten DNSEndpoints of A names are published; then one moves
// its targets, one is deleted and one swaps half its names. After each step an audit of the
// zone, read straight from the fake (not through the proxy), must be exact: every wanted name
// with exactly its one target and exactly one registry record of this owner naming it, no other
// name or registry record of this owner (nothing orphaned), every foreign set as seeded, byte
// for byte. The requests stay within cloudFaultBudget per record.
//
// The rates differ so that each case sees every kind in a few minutes at most. Route 53 writes
// 100 records in a request or two: 50% of its few requests. Azure DNS writes one record set per
// request, with a read of the zone and of the set before each (3 requests a set), and
// azcore waits 4 s before its first retry: its case is smaller (2 names per DNSEndpoint) and its
// rate 10%, so that it converges within the zone writer's 2-minute call.
func TestCloudFakes_ConvergeThroughFaults(t *testing.T) {
	cases := []struct {
		name        string
		perEndpoint int
		rate        float64
	}{
		{"route53", 10, 0.5},
		{"clouddns", 10, 0.3},
		{"azure", 2, 0.1},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var (
				c        cloud
				upstream string
				endpoint []string // the Secret keys that name the API, pointed at the proxy
			)
			switch tc.name {
			case "route53":
				fake, cl := startRoute53(t, "")
				c, upstream, endpoint = cl, fake.URL, []string{"AWS_ENDPOINT_URL"}
			case "clouddns":
				fake, cl := startCloudDNS(t)
				c, upstream, endpoint = cl, fake.URL, []string{"GOOGLE_ENDPOINT_URL"}
			case "azure":
				fake, cl := startAzure(t, "")
				azureTrusted(t, fake)
				c, upstream, endpoint = cl, fake.URL, []string{"AZURE_ENDPOINT_URL", "AZURE_AUTHORITY_HOST"}
			}
			proxy := faultproxy.New(upstream, faultproxy.Options{TLS: strings.HasPrefix(upstream, "https://")})
			t.Cleanup(proxy.Close)
			seed := uint64(29 + i)
			proxy.SetPolicy(faultproxy.Cycle(tc.rate, seed, faultproxy.Faults()...))
			viaProxy := maps.Clone(c.data)
			for _, k := range endpoint {
				viaProxy[k] = strings.Replace(viaProxy[k], upstream, proxy.URL(), 1)
			}

			ns, zone := "faults-"+tc.name, tc.name+".faults.test"
			create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
				secretObj(ns, "dns", c.secretType, viaProxy), secretObj(ns, "direct", c.secretType, c.data))
			t.Cleanup(func() { proxy.SetPolicy(faultproxy.None); deleteAll(t, ns) })
			start := time.Now()
			z := zoneObj(ns, "z", zone, nil)
			create(t, z)
			conditions.Wait(t, k8s, z, dnsv1.ConditionReady, conditions.Want{Status: metav1.ConditionTrue, Reason: dnsv1.ReasonReady}, 3*time.Minute)
			zoneReady := time.Since(start)

			direct := directProvider(t, ns, "direct")
			zones, err := direct.ListZones(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			if n := countZones(zones, zone); n != 1 {
				t.Fatalf("%d hosted zones named %s at the fake, want 1: a create whose reply was lost made another", n, zone)
			}
			foreign := seedForeignSets(t, direct, z.Status.ZoneID, zone)
			reasons := watchReadyReasons(t, ns)

			// Ten DNSEndpoints of perEndpoint names each.
			n := tc.perEndpoint
			host := func(k int) string { return "h" + strconv.Itoa(k) + "." + zone }
			wanted := map[string]string{}
			eps := make([]*dnsv1.DNSEndpoint, 10)
			for j := range eps {
				var list []dnsv1.Endpoint
				for k := n * j; k < n*j+n; k++ {
					target := fmt.Sprintf("192.0.2.%d", k)
					list = append(list, dnsv1.Endpoint{DNSName: host(k), RecordType: "A", Targets: dnsv1.Targets{target}})
					wanted[host(k)] = target
				}
				eps[j] = endpointObj(ns, "ep"+strconv.Itoa(j), list...)
			}
			before := proxy.Counts()
			start = time.Now()
			create(t, asObjects(eps)...)
			for _, ep := range eps {
				conditions.Wait(t, k8s, ep, dnsv1.ConditionReady, conditions.Want{Status: metav1.ConditionTrue, Reason: dnsv1.ReasonPublished, Current: true}, 3*time.Minute)
			}
			waitExact(t, direct, z.Status.ZoneID, zone, wanted, foreign, "first sync")
			firstSync := time.Since(start)
			first := proxy.Counts()

			// The change: ep0 moves every target, ep1 goes, ep2 swaps its second half of names
			// for new ones.
			start = time.Now()
			updateIn(t, k8s, eps[0], func() {
				for k := range eps[0].Spec.Endpoints {
					eps[0].Spec.Endpoints[k].Targets = dnsv1.Targets{fmt.Sprintf("198.51.100.%d", k)}
					wanted[host(k)] = fmt.Sprintf("198.51.100.%d", k)
				}
			})
			updateIn(t, k8s, eps[2], func() {
				for k := n / 2; k < n; k++ {
					delete(wanted, host(2*n+k))
					eps[2].Spec.Endpoints[k] = dnsv1.Endpoint{DNSName: host(10*n + k), RecordType: "A", Targets: dnsv1.Targets{fmt.Sprintf("203.0.113.%d", k)}}
					wanted[host(10*n+k)] = fmt.Sprintf("203.0.113.%d", k)
				}
			})
			if err := k8s.Delete(ctxT(t), eps[1]); err != nil {
				t.Fatal(err)
			}
			for k := n; k < 2*n; k++ {
				delete(wanted, host(k))
			}
			for _, ep := range []*dnsv1.DNSEndpoint{eps[0], eps[2]} {
				conditions.Wait(t, k8s, ep, dnsv1.ConditionReady, conditions.Want{Status: metav1.ConditionTrue, Reason: dnsv1.ReasonPublished, Current: true}, 3*time.Minute)
			}
			waitGone(t, eps[1])
			waitExact(t, direct, z.Status.ZoneID, zone, wanted, foreign, "change")
			change := time.Since(start)
			all := proxy.Counts()

			faulted := make([]string, 0, len(all.ByKind))
			for _, k := range faultproxy.Faults() {
				faulted = append(faulted, fmt.Sprintf("%s %d", k, all.ByKind[k]))
			}
			changed := n + n + n/2 // moved, deleted, swapped
			t.Logf("%s, %.0f%% of requests faulted: zone Ready in %s; first sync of %d records in %s, %d requests (%.2f a record); "+
				"a change of %d records in %s, %d requests; in all %d requests, %d faulted (%s), %d reached the fake (statuses %v); "+
				"Ready reasons seen: %s",
				tc.name, 100*tc.rate, zoneReady.Round(time.Millisecond), 10*n, firstSync.Round(time.Millisecond), first.Requests-before.Requests,
				float64(first.Requests-before.Requests)/float64(10*n), changed, change.Round(time.Millisecond), all.Requests-first.Requests,
				all.Requests, all.Faulted(), strings.Join(faulted, ", "), all.Forwarded, all.UpstreamStatus, reasons())
			if budget := uint64(cloudFaultBudget * len(wanted)); all.Requests > budget {
				t.Errorf("%d requests, over the budget of %d (%d a record wanted)", all.Requests, budget, cloudFaultBudget)
			}
			for _, k := range faultproxy.Faults() {
				if all.ByKind[k] == 0 {
					t.Errorf("no request got the fault %s: the scenario did not test it", k)
				}
			}
		})
	}
}

// directProvider returns the provider of Secret ns/name built by a factory of its own, which reads
// the Secret uncached: the test's view of the cloud fake, beside the manager's.
func directProvider(t *testing.T, ns, name string) dnsprovider.Provider {
	t.Helper()
	reader, err := client.New(restCfg, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	f := &factory.Factory{Client: reader, ZoneListTTL: -1}
	res, err := f.Resolve(ctxT(t), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return res.Provider
}

func countZones(zones []dnsprovider.Zone, name string) int {
	n := 0
	for _, z := range zones {
		if dnswire.Dotless(z.Name) == dnswire.Dotless(name) {
			n++
		}
	}
	return n
}

// seedForeignSets writes, straight to the fake, record sets this manager must never change: two
// unowned A sets, two A sets of another dnsplane owner with their registry records, and two A sets
// of an external-dns owner with its TXT. It returns every set of the zone but the SOA as it then
// is (the apex NS included), in setText form.
func seedForeignSets(t *testing.T, p dnsprovider.Provider, zoneID, zone string) map[string]string {
	t.Helper()
	var changes []dnsprovider.Change
	add := func(name, typ string, targets ...string) {
		changes = append(changes, dnsprovider.Change{Action: dnsprovider.ActionCreate,
			After: &dnsprovider.RecordSet{Name: name, Type: typ, TTL: 120, Targets: targets}})
	}
	for k := range 2 {
		add(fmt.Sprintf("foreign%d.%s", k, zone), "A", fmt.Sprintf("192.0.2.%d", 200+k))
		other := fmt.Sprintf("other%d.%s", k, zone)
		add(other, "A", fmt.Sprintf("192.0.2.%d", 210+k))
		e := registry.Entry{OwnerID: "other-cluster", Resource: registry.Resource("dnsendpoint", "default", "theirs"),
			Name: other, Type: "A", TTL: 120, Targets: []string{fmt.Sprintf("192.0.2.%d", 210+k)}}
		rs := registry.RecordSet(zone, e)
		changes = append(changes, dnsprovider.Change{Action: dnsprovider.ActionCreate, After: &rs})
		ext := fmt.Sprintf("ext%d.%s", k, zone)
		add(ext, "A", fmt.Sprintf("192.0.2.%d", 220+k))
		add("a-"+ext, "TXT", "heritage=external-dns,external-dns/owner=someone-else,external-dns/resource=service/default/web")
	}
	if err := p.ApplyChanges(ctxT(t), zoneID, changes); err != nil {
		t.Fatalf("seed foreign record sets: %v", err)
	}
	sets, err := p.ListRecordSets(ctxT(t), zoneID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range sets {
		if s.Type != "SOA" {
			out[s.Key().String()] = setText(s)
		}
	}
	if len(out) < len(changes) {
		t.Fatalf("after seeding %d foreign sets the zone holds %d sets: %v", len(changes), len(out), out)
	}
	return out
}

// setText is a record set's TTL and sorted targets, for byte-for-byte comparison.
func setText(s dnsprovider.RecordSet) string {
	targets := slices.Clone(s.Targets)
	slices.Sort(targets)
	return strconv.FormatInt(s.TTL, 10) + " " + strings.Join(targets, " | ")
}

// cloudAudit is one zone's record sets judged against the wanted records (name → its one A
// target) and the foreign sets as seeded.
type cloudAudit struct {
	Wanted, Present, Duplicated, Orphaned, ForeignTouched int
	// Problems names each set that is not as it should be, for the failure message.
	Problems []string
}

func (a cloudAudit) exact() bool {
	return a.Present == a.Wanted && a.Duplicated == 0 && a.Orphaned == 0 && a.ForeignTouched == 0
}

// auditCloudZone judges sets (pure): a wanted name is present when its A set holds exactly its
// target and exactly one registry record of ownerID names that set with that target, at the
// registry name registry.Name gives; an A set or registry record of ownerID for anything else is
// orphaned; a foreign set that differs from its seeded text, is gone, or a set nobody wrote is a
// foreign set touched.
func auditCloudZone(zone string, sets []dnsprovider.RecordSet, wanted, foreign map[string]string) cloudAudit {
	a := cloudAudit{Wanted: len(wanted)}
	bad := func(counter *int, format string, args ...any) {
		*counter++
		a.Problems = append(a.Problems, fmt.Sprintf(format, args...))
	}
	seen := map[string]bool{}
	served := map[string]bool{}
	regs := map[string]int{}
	for _, s := range sets {
		key := s.Key().String()
		if want, ok := foreign[key]; ok {
			seen[key] = true
			if got := setText(s); got != want {
				bad(&a.ForeignTouched, "foreign %s is %q, seeded %q", key, got, want)
			}
			continue
		}
		switch {
		case s.Type == "SOA":
		case s.Type == "A":
			want, ok := wanted[s.Name]
			switch {
			case !ok:
				bad(&a.Orphaned, "A %s %v is not wanted", s.Name, s.Targets)
			case len(s.Targets) > 1:
				bad(&a.Duplicated, "A %s has %v, want only %s", s.Name, s.Targets, want)
			case s.Targets[0] != want:
				bad(&a.Orphaned, "A %s has %v, want %s", s.Name, s.Targets, want)
			default:
				served[s.Name] = true
			}
		case s.Type == "TXT" && registry.IsRegistryName(s.Name):
			if len(s.Targets) != 1 {
				bad(&a.Duplicated, "registry %s holds %d values", s.Name, len(s.Targets))
				continue
			}
			e, err := registry.Parse(s.Targets[0])
			switch {
			case err != nil || e.OwnerID != ownerID:
				bad(&a.ForeignTouched, "registry %s %q was not seeded and is not this owner's", s.Name, s.Targets[0])
			case e.Type != "A" || len(e.Targets) != 1 || e.Targets[0] != wanted[e.Name] ||
				registry.Name(zone, e.Contributor(), e.Key()) != s.Name:
				bad(&a.Orphaned, "registry %s names %s %s %v, which is not wanted there", s.Name, e.Name, e.Type, e.Targets)
			default:
				regs[e.Name]++
			}
		default:
			bad(&a.ForeignTouched, "%s %v was not seeded and is not this owner's", key, s.Targets)
		}
	}
	for key := range foreign {
		if !seen[key] {
			bad(&a.ForeignTouched, "foreign %s is gone", key)
		}
	}
	for name := range wanted {
		switch n := regs[name]; {
		case n > 1:
			bad(&a.Duplicated, "%s has %d registry records of this owner", name, n)
		case served[name] && n == 1:
			a.Present++
		}
	}
	return a
}

// waitExact polls the zone, straight from the fake, until the audit is exact (bound 2 minutes,
// which only catches a hang: the objects are Ready when it starts).
func waitExact(t *testing.T, p dnsprovider.Provider, zoneID, zone string, wanted, foreign map[string]string, when string) {
	t.Helper()
	eventually(t, 2*time.Minute, when+": the zone audits exact", func() error {
		sets, err := p.ListRecordSets(ctxT(t), zoneID)
		if err != nil {
			return err
		}
		if a := auditCloudZone(zone, sets, wanted, foreign); !a.exact() {
			return fmt.Errorf("wanted %d, present %d, duplicated %d, orphaned %d, foreign touched %d: %s",
				a.Wanted, a.Present, a.Duplicated, a.Orphaned, a.ForeignTouched, strings.Join(a.Problems, "; "))
		}
		return nil
	})
}

// watchReadyReasons polls the DNSEndpoints of ns every 500 ms until t ends and returns a summary
// of the Ready reasons seen ("Published 10, ProviderError 4": objects that showed each).
func watchReadyReasons(t *testing.T, ns string) func() string {
	var mu sync.Mutex
	seen := map[string]map[string]bool{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			var list dnsv1.DNSEndpointList
			if err := k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
				mu.Lock()
				seen["(list error: "+err.Error()+")"] = map[string]bool{"": true}
				mu.Unlock()
			} else {
				mu.Lock()
				for _, ep := range list.Items {
					if c := findCond(ep.Status.Conditions, dnsv1.ConditionReady); c != nil {
						if seen[c.Reason] == nil {
							seen[c.Reason] = map[string]bool{}
						}
						seen[c.Reason][ep.Name] = true
					}
				}
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for _, r := range slices.Sorted(maps.Keys(seen)) {
			out = append(out, fmt.Sprintf("%s %d", r, len(seen[r])))
		}
		return strings.Join(out, ", ")
	}
}

func asObjects(eps []*dnsv1.DNSEndpoint) []client.Object {
	out := make([]client.Object, len(eps))
	for i, ep := range eps {
		out[i] = ep
	}
	return out
}
