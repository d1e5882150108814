package webhook_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
	"github.com/dnsplane/dnsplane/internal/testing/webhooktest"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/providertest"
	"github.com/dnsplane/dnsplane/pkg/provider/webhook"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

// TestConformance_InMemory runs the provider conformance suite against external-dns v0.22.0's
// own webhook server around its in-memory provider: a fresh server, holding one zone, per
// subtest. The zone is adopted (the protocol creates none).
func TestConformance_InMemory(t *testing.T) {
	providertest.Run(t, providertest.Harness{
		New: func(t *testing.T) providertest.Backend {
			zone := zoneName("mem")
			url := startMemory(t, zone)
			return providertest.Backend{
				Provider:       newProvider(t, url, webhook.Config{}),
				Restart:        func(t *testing.T) provider.Provider { return newProvider(t, url, webhook.Config{}) },
				ExistingZoneID: zone,
			}
		},
	})
}

// TestConformance_PowerDNS runs the suite against the same server around external-dns's in-tree
// PowerDNS provider over a real PowerDNS (caches off), each subtest in a zone created at
// PowerDNS beforehand, with answers checked on PowerDNS's DNS port.
func TestConformance_PowerDNS(t *testing.T) {
	srv := pdnstest.Start(t)
	url := webhooktest.StartPDNS(t, srv.APIURL, srv.Key)
	providertest.Run(t, providertest.Harness{
		New: func(t *testing.T) providertest.Backend {
			zone := pdnsZone(t, srv, "pdns")
			return providertest.Backend{
				Provider:       newProvider(t, url, webhook.Config{}),
				Restart:        func(t *testing.T) provider.Provider { return newProvider(t, url, webhook.Config{}) },
				DNSAddr:        srv.DNSAddr,
				ExistingZoneID: zone,
			}
		},
	})
}

// pdnsZone creates a zone at PowerDNS, as its operator would for a webhook (which cannot), and
// deletes it when the test ends.
func pdnsZone(t *testing.T, srv pdnstest.Server, label string) string {
	t.Helper()
	zone := zoneName(label)
	body := fmt.Sprintf(`{"name":%q,"kind":"Native","nameservers":[%q]}`, zone+".", "ns1."+zone+".")
	if code, resp := srv.API(t, http.MethodPost, "/zones", body); code != http.StatusCreated {
		t.Fatalf("create zone %s at PowerDNS: HTTP %d %s", zone, code, resp)
	}
	t.Cleanup(func() { srv.API(t, http.MethodDelete, "/zones/"+zone+".", "") })
	return zone
}

// TestPowerDNS_WritesAreServedWithTheirRegistryRecords: a record set and dnsplane's registry TXT
// record for it, written through the webhook in one write, are both answered by PowerDNS's DNS
// port, the registry value exactly as dnsplane encoded it.
func TestPowerDNS_WritesAreServedWithTheirRegistryRecords(t *testing.T) {
	srv := pdnstest.Start(t)
	url := webhooktest.StartPDNS(t, srv.APIURL, srv.Key)
	zone := pdnsZone(t, srv, "registry")
	p := providertest.Guarded(newProvider(t, url, webhook.Config{}))
	set := provider.RecordSet{Name: "app." + zone, Type: "A", TTL: 60, Targets: []string{"192.0.2.10", "192.0.2.11"}}
	entry := registry.Entry{OwnerID: "cluster-a", Resource: registry.Resource("DNSEndpoint", "team-a", "app"),
		Name: set.Name, Type: set.Type, TTL: set.TTL, Targets: set.Targets}
	reg := registry.RecordSet(zone, entry)
	if err := p.ApplyChanges(ctx(t), zone, []provider.Change{
		{Action: provider.ActionCreate, After: &set}, {Action: provider.ActionCreate, After: &reg},
	}); err != nil {
		t.Fatal(err)
	}
	if got := query(t, srv.DNSAddr, set.Name, dns.TypeA); !slices.Equal(got, []string{"192.0.2.10", "192.0.2.11"}) {
		t.Errorf("PowerDNS answers %s A %q", set.Name, got)
	}
	got := query(t, srv.DNSAddr, reg.Name, dns.TypeTXT)
	if len(got) != 1 || got[0] != entry.Encode() {
		t.Fatalf("PowerDNS answers %s TXT %q, want the registry value %q", reg.Name, got, entry.Encode())
	}
	parsed, err := registry.Parse(got[0])
	if err != nil || !parsed.Equal(entry) {
		t.Fatalf("the served registry value parses as %+v, %v; want %+v", parsed, err, entry)
	}
	// And dnsplane reads both back through the webhook as it wrote them.
	sets, err := p.ListRecordSets(ctx(t), zone)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []provider.RecordSet{set, reg} {
		if i := slices.IndexFunc(sets, func(rs provider.RecordSet) bool { return rs.Key() == want.Key() }); i < 0 || !sets[i].Equal(want) {
			t.Errorf("listed %v, want %s", sets, want)
		}
	}
}

// TestZones_ANewZoneIsFoundWhileTheFilterIsCached: a zone created at PowerDNS after the provider
// negotiated is adopted at once: a name the cached domain filter misses is asked again.
func TestZones_ANewZoneIsFoundWhileTheFilterIsCached(t *testing.T) {
	srv := pdnstest.Start(t)
	url := webhooktest.StartPDNS(t, srv.APIURL, srv.Key)
	first := pdnsZone(t, srv, "first")
	p := newProvider(t, url, webhook.Config{FilterMaxAge: time.Hour})
	if _, err := p.GetZone(ctx(t), first); err != nil {
		t.Fatal(err)
	}
	second := pdnsZone(t, srv, "second")
	z, err := p.GetZone(ctx(t), second)
	if err != nil || z.Name != second || len(z.NameServers) != 1 || z.NameServers[0] != "ns1."+second {
		t.Fatalf("GetZone of a zone created after the negotiation = %+v, %v", z, err)
	}
}

// TestAdjustEndpoints_ASetTheWebhookWouldNotHoldIsNotCapable: external-dns's PowerDNS provider
// drops, in AdjustEndpoints, an endpoint it cannot write (here a TXT set marked as an alias,
// which only A, AAAA and CNAME can be); dnsplane refuses the write as ErrNotCapable naming the set,
// and writes nothing of it.
func TestAdjustEndpoints_ASetTheWebhookWouldNotHoldIsNotCapable(t *testing.T) {
	srv := pdnstest.Start(t)
	url := webhooktest.StartPDNS(t, srv.APIURL, srv.Key)
	zone := pdnsZone(t, srv, "adjust")
	p := newProvider(t, url, webhook.Config{})
	ok := provider.RecordSet{Name: "ok." + zone, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	alias := provider.RecordSet{Name: "txt." + zone, Type: "TXT", TTL: 60, Targets: []string{"v"}, ProviderSpecific: map[string]string{"alias": "true"}}
	err := p.ApplyChanges(ctx(t), zone, []provider.Change{{Action: provider.ActionCreate, After: &ok}, {Action: provider.ActionCreate, After: &alias}})
	if !errors.Is(err, provider.ErrNotCapable) || !strings.Contains(err.Error(), alias.Key().String()) {
		t.Fatalf("ApplyChanges = %v, want ErrNotCapable naming %s", err, alias.Key())
	}
	sets, err := p.ListRecordSets(ctx(t), zone)
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range sets {
		if rs.Name == ok.Name || rs.Name == alias.Name {
			t.Errorf("%s was written", rs)
		}
	}
}

// query asks addr for name/qtype over TCP and returns the answer's canonical targets, sorted.
func query(t *testing.T, addr, name string, qtype uint16) []string {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dnswire.Fqdn(name), qtype)
	c := &dns.Client{Net: "tcp", Timeout: 5 * time.Second}
	resp, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("query %s: %v", name, err)
	}
	var out []string
	for _, rr := range resp.Answer {
		if rr.Header().Rrtype == qtype {
			out = append(out, provider.TargetFromRR(rr))
		}
	}
	slices.Sort(out)
	return out
}

// TestZones_AdoptedByNameWithinTheDomainFilter: the webhook's include names are its zones; a
// name the filter does not match is ErrZoneNotFound; EnsureZone and DeleteZone are
// ErrNotCapable; GetZone reads the apex NS set as the zone's name servers.
func TestZones_AdoptedByNameWithinTheDomainFilter(t *testing.T) {
	a, b := zoneName("a"), zoneName("b")
	url := startMemory(t, a, b)
	p := providertest.Guarded(newProvider(t, url, webhook.Config{}))
	zones, err := p.ListZones(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, z := range zones {
		if z.ID != z.Name {
			t.Errorf("zone %+v: the ID must be the name", z)
		}
		names = append(names, z.Name)
	}
	want := []string{a, b}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("ListZones = %q, want %q", names, want)
	}
	for _, id := range []string{"elsewhere.test", "webhook.test", "not a name"} {
		if _, err := p.GetZone(ctx(t), id); !errors.Is(err, provider.ErrZoneNotFound) {
			t.Errorf("GetZone(%q) = %v, want ErrZoneNotFound", id, err)
		}
		if _, _, err := provider.ReadZone(ctx(t), p, id); !errors.Is(err, provider.ErrZoneNotFound) {
			t.Errorf("ReadZone(%q) = %v, want ErrZoneNotFound", id, err)
		}
	}
	_, err = p.EnsureZone(ctx(t), provider.ZoneSpec{Name: a, CallerReference: "uid"})
	if !errors.Is(err, provider.ErrNotCapable) || !strings.Contains(err.Error(), "zoneID") {
		t.Errorf("EnsureZone = %v, want ErrNotCapable naming spec.zoneID", err)
	}
	if err := p.DeleteZone(ctx(t), a); !errors.Is(err, provider.ErrNotCapable) {
		t.Errorf("DeleteZone = %v, want ErrNotCapable", err)
	}
	ns := provider.RecordSet{Name: a, Type: "NS", TTL: 3600, Targets: []string{"ns1.example.net", "ns2.example.net"}}
	if err := p.ApplyChanges(ctx(t), strings.ToUpper(a)+".", []provider.Change{{Action: provider.ActionCreate, After: &ns}}); err != nil {
		t.Fatal(err)
	}
	z, err := p.GetZone(ctx(t), a)
	if err != nil || z.ID != a || !slices.Equal(z.NameServers, ns.Targets) {
		t.Fatalf("GetZone = %+v, %v; want the apex NS targets as name servers", z, err)
	}
}

// TestListRecordSets_StopsAtADeeperZoneOfTheFilter: with zones example and sub.example in the
// filter, the parent lists none of the child's sets but the delegation NS, and a write into the
// parent at a name inside the child is refused before anything is sent.
func TestListRecordSets_StopsAtADeeperZoneOfTheFilter(t *testing.T) {
	parent := zoneName("parent")
	child := "sub." + parent
	url := startMemory(t, parent, child)
	p := providertest.Guarded(newProvider(t, url, webhook.Config{}))
	inChild := provider.RecordSet{Name: "www." + child, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	delegation := provider.RecordSet{Name: child, Type: "NS", TTL: 60, Targets: []string{"ns1.example.net"}}
	inParent := provider.RecordSet{Name: "www." + parent, Type: "A", TTL: 60, Targets: []string{"192.0.2.2"}}
	if err := p.ApplyChanges(ctx(t), child, []provider.Change{{Action: provider.ActionCreate, After: &inChild}, {Action: provider.ActionCreate, After: &delegation}}); err != nil {
		t.Fatal(err)
	}
	if err := p.ApplyChanges(ctx(t), parent, []provider.Change{{Action: provider.ActionCreate, After: &inParent}}); err != nil {
		t.Fatal(err)
	}
	keys := func(zone string) []string {
		sets, err := p.ListRecordSets(ctx(t), zone)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, rs := range sets {
			out = append(out, rs.Key().String())
		}
		slices.Sort(out)
		return out
	}
	if got, want := keys(parent), []string{delegation.Key().String(), inParent.Key().String()}; !slices.Equal(got, want) {
		t.Errorf("parent lists %q, want %q", got, want)
	}
	if got, want := keys(child), []string{delegation.Key().String(), inChild.Key().String()}; !slices.Equal(got, want) {
		t.Errorf("child lists %q, want %q", got, want)
	}
	bad := provider.RecordSet{Name: "mail." + child, Type: "A", TTL: 60, Targets: []string{"192.0.2.3"}}
	if err := p.ApplyChanges(ctx(t), parent, []provider.Change{{Action: provider.ActionCreate, After: &bad}}); !errors.Is(err, provider.ErrInvalidChange) {
		t.Errorf("a write into the parent inside the child: %v, want ErrInvalidChange", err)
	}
}

// TestApplyChanges_CollapsesChangesToOneKey: a delete and a re-create of one set, and a create
// then an update of another, in one call, are one document the in-memory provider accepts
// (it refuses a key twice in one document) with the same end state.
func TestApplyChanges_CollapsesChangesToOneKey(t *testing.T) {
	zone := zoneName("collapse")
	url := startMemory(t, zone)
	p := newProvider(t, url, webhook.Config{})
	old := provider.RecordSet{Name: "a." + zone, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	if err := p.ApplyChanges(ctx(t), zone, []provider.Change{{Action: provider.ActionCreate, After: &old}}); err != nil {
		t.Fatal(err)
	}
	again := provider.RecordSet{Name: old.Name, Type: "A", TTL: 120, Targets: []string{"192.0.2.9"}}
	b1 := provider.RecordSet{Name: "b." + zone, Type: "TXT", TTL: 60, Targets: []string{"one"}}
	b2 := provider.RecordSet{Name: b1.Name, Type: "TXT", TTL: 60, Targets: []string{"two"}}
	c := provider.RecordSet{Name: "c." + zone, Type: "A", TTL: 60, Targets: []string{"192.0.2.3"}}
	if err := p.ApplyChanges(ctx(t), zone, []provider.Change{
		{Action: provider.ActionDelete, Before: &old}, {Action: provider.ActionCreate, After: &again},
		{Action: provider.ActionCreate, After: &b1}, {Action: provider.ActionUpdate, Before: &b1, After: &b2},
		{Action: provider.ActionCreate, After: &c}, {Action: provider.ActionDelete, Before: &c},
	}); err != nil {
		t.Fatal(err)
	}
	sets, err := p.ListRecordSets(ctx(t), zone)
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 2 {
		t.Fatalf("listed %v, want a and b only", sets)
	}
	for _, want := range []provider.RecordSet{again, b2} {
		if i := slices.IndexFunc(sets, func(rs provider.RecordSet) bool { return rs.Key() == want.Key() }); i < 0 || !sets[i].Equal(want) {
			t.Errorf("listed %v, want %s", sets, want)
		}
	}
}

// TestSharedChanges_KeepAnotherWritersTargets: a shared change (a DNSRecord set) is applied as
// its delta onto the set as the webhook holds it just before the write, so a target another
// writer added since this writer's read stays; an unshared change replaces the set.
func TestSharedChanges_KeepAnotherWritersTargets(t *testing.T) {
	zone := zoneName("shared")
	url := startMemory(t, zone)
	mine, theirs := newProvider(t, url, webhook.Config{}), newProvider(t, url, webhook.Config{})
	read := provider.RecordSet{Name: "app." + zone, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	apply := func(p *webhook.Provider, changes ...provider.Change) {
		t.Helper()
		if err := p.ApplyChanges(ctx(t), zone, changes); err != nil {
			t.Fatal(err)
		}
	}
	listed := func() provider.RecordSet {
		t.Helper()
		sets, err := mine.ListRecordSets(ctx(t), zone)
		if err != nil || len(sets) != 1 {
			t.Fatalf("listed %v, %v; want one set", sets, err)
		}
		return sets[0]
	}
	apply(mine, provider.Change{Action: provider.ActionCreate, After: &read, Shared: true})
	// Another cluster adds its target after this writer's read.
	theirsAfter := read.Clone()
	theirsAfter.Targets = append(theirsAfter.Targets, "192.0.2.2")
	apply(theirs, provider.Change{Action: provider.ActionUpdate, Before: &read, After: &theirsAfter, Shared: true})
	// This writer, planning from its stale read, adds its second target and changes the TTL.
	mineAfter := read.Clone()
	mineAfter.TTL, mineAfter.Targets = 30, []string{"192.0.2.1", "192.0.2.3"}
	apply(mine, provider.Change{Action: provider.ActionUpdate, Before: &read, After: &mineAfter, Shared: true})
	want := provider.RecordSet{Name: read.Name, Type: "A", TTL: 30, Targets: []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"}}
	if got := listed(); !got.Equal(want) {
		t.Fatalf("after two writers' shared updates: %s, want %s", got, want)
	}
	// Its shared delete removes only its own targets.
	mine1 := provider.RecordSet{Name: read.Name, Type: "A", TTL: 30, Targets: []string{"192.0.2.1", "192.0.2.3"}}
	apply(mine, provider.Change{Action: provider.ActionDelete, Before: &mine1, Shared: true})
	want = provider.RecordSet{Name: read.Name, Type: "A", TTL: 30, Targets: []string{"192.0.2.2"}}
	if got := listed(); !got.Equal(want) {
		t.Fatalf("after a shared delete: %s, want %s", got, want)
	}
	// An unshared update replaces the set whole.
	only := provider.RecordSet{Name: read.Name, Type: "A", TTL: 30, Targets: []string{"192.0.2.9"}}
	apply(mine, provider.Change{Action: provider.ActionUpdate, Before: &want, After: &only})
	if got := listed(); !got.Equal(only) {
		t.Fatalf("after an unshared update: %s, want %s", got, only)
	}
}

// TestProviderSpecific_RoundTrips: provider-specific options travel to the webhook and back.
func TestProviderSpecific_RoundTrips(t *testing.T) {
	zone := zoneName("ps")
	p := newProvider(t, startMemory(t, zone), webhook.Config{})
	rs := provider.RecordSet{Name: "x." + zone, Type: "CNAME", TTL: 60, Targets: []string{"target.example.net"},
		ProviderSpecific: map[string]string{"alias": "true", "webhook/option": "a b"}}
	if err := p.ApplyChanges(ctx(t), zone, []provider.Change{{Action: provider.ActionCreate, After: &rs}}); err != nil {
		t.Fatal(err)
	}
	sets, err := p.ListRecordSets(ctx(t), zone)
	if err != nil || len(sets) != 1 || !sets[0].Equal(rs) {
		t.Fatalf("listed %v, %v; want %s with its provider-specific options", sets, err, rs)
	}
}

// faults is a reverse proxy in front of the real webhook server that records the headers it
// receives and, while fail is set, answers every request with that status and body instead.
type faults struct {
	url      string
	requests atomic.Int64
	mu       sync.Mutex
	fail     int
	body     string
	headers  []http.Header
}

func newFaults(t *testing.T, target string) *faults {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	f := &faults{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		f.mu.Lock()
		f.headers = append(f.headers, r.Header.Clone())
		code, body := f.fail, f.body
		f.mu.Unlock()
		if code != 0 {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(code)
			_, _ = io.WriteString(w, body)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

func (f *faults) set(code int, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail, f.body = code, body
}

// TestErrors_StatusesMapAndNeverShowHeaders: every request carries the configured headers and
// the protocol's media type; a 5xx is ErrUnavailable, retried by the guard; a 4xx of a write is
// ErrInvalidChange carrying the webhook's text; 401 is ErrInvalidCredentials; a header value
// the webhook echoes never reaches an error.
func TestErrors_StatusesMapAndNeverShowHeaders(t *testing.T) {
	const secret = "Bearer s3cret-token-value"
	zone := zoneName("errors")
	f := newFaults(t, startMemory(t, zone))
	raw := newProvider(t, f.url, webhook.Config{Headers: http.Header{"Authorization": {secret}}, FilterMaxAge: time.Hour})
	p := providertest.Guarded(raw)
	if _, err := p.GetZone(ctx(t), zone); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	for _, h := range f.headers {
		if h.Get("Authorization") != secret || h.Get("Accept") != webhook.MediaType {
			t.Errorf("request headers %v lack the configured header or the media type", h)
		}
	}
	f.mu.Unlock()
	rs := provider.RecordSet{Name: "www." + zone, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	write := func() error {
		return p.ApplyChanges(ctx(t), zone, []provider.Change{{Action: provider.ActionCreate, After: &rs}})
	}

	f.set(http.StatusInternalServerError, "backend down")
	before := f.requests.Load()
	err := write()
	if !errors.Is(err, provider.ErrUnavailable) || !strings.Contains(err.Error(), "backend down") {
		t.Errorf("500: %v, want ErrUnavailable with the webhook's text", err)
	}
	if n := f.requests.Load() - before; n < 2 {
		t.Errorf("500 was sent %d times, want the guard's retries", n)
	}

	f.set(http.StatusBadRequest, `{"error":"record type A not allowed here; token was `+secret+`"}`)
	before = f.requests.Load()
	err = write()
	if !errors.Is(err, provider.ErrInvalidChange) || !strings.Contains(err.Error(), "record type A not allowed here") {
		t.Errorf("400: %v, want ErrInvalidChange with the webhook's text", err)
	}
	if n := f.requests.Load() - before; n != 1 {
		t.Errorf("400 was sent %d times, want once (4xx is never retried)", n)
	}
	if err != nil && strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the error shows the header value: %v", err)
	}

	f.set(http.StatusUnauthorized, "no")
	if err := write(); !errors.Is(err, provider.ErrInvalidCredentials) {
		t.Errorf("401: %v, want ErrInvalidCredentials", err)
	}

	f.set(http.StatusTooManyRequests, "slow down")
	if _, ok := provider.RetryAfter(raw.ApplyChanges(ctx(t), zone, []provider.Change{{Action: provider.ActionCreate, After: &rs}})); !ok {
		t.Errorf("429 is not ErrThrottled")
	}

	f.set(0, "")
	if err := write(); err != nil {
		t.Fatalf("after the faults: %v", err)
	}
}

// TestNegotiate_RefusesAnotherMediaType: a server that is no webhook (a plain JSON API) fails the
// negotiation with a message naming the media type.
func TestNegotiate_RefusesAnotherMediaType(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"include":["example.test"]}`)
	}))
	t.Cleanup(srv.Close)
	p := newProvider(t, srv.URL, webhook.Config{})
	_, err := p.Negotiate(context.Background())
	if err == nil || !strings.Contains(err.Error(), webhook.MediaType) {
		t.Fatalf("Negotiate = %v, want an error naming %s", err, webhook.MediaType)
	}
}

// gatedRecords is a proxy to a webhook server that holds the first GET /records it sees until
// release is closed, and counts the GET /records it passes.
type gatedRecords struct {
	url     string
	held    chan struct{} // closed when the first GET /records arrived
	release chan struct{}
	gets    atomic.Int64
	first   atomic.Bool
	once    sync.Once
}

// open lets the held GET /records go (once; also at the test's end).
func (g *gatedRecords) open() { g.once.Do(func() { close(g.release) }) }

func newGatedRecords(t *testing.T, target string) *gatedRecords {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	g := &gatedRecords{held: make(chan struct{}), release: make(chan struct{})}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/records" {
			g.gets.Add(1)
			if g.first.CompareAndSwap(false, true) {
				close(g.held)
				<-g.release
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(g.open) // before srv.Close: a held request would keep Close waiting
	g.url = srv.URL
	return g
}

// TestReads_AListingBeganBeforeAWriteIsNotSharedAfterIt (calls at the floor, for webhooks): zone
// reads share one GET /records while it is in flight, so that a webhook's DNSZones adopted at
// once cost one listing; but a read asked for after a write was sent never gets a listing that
// began before it. Here a listing is held at the proxy, a write goes through meanwhile, and a
// read made after the write answers with the written set: it sent its own GET.
func TestReads_AListingBeganBeforeAWriteIsNotSharedAfterIt(t *testing.T) {
	zone := zoneName("shared")
	g := newGatedRecords(t, startMemory(t, zone))
	p := newProvider(t, g.url, webhook.Config{})
	early := make(chan error, 1)
	go func() {
		_, err := p.ListRecordSets(ctx(t), zone)
		early <- err
	}()
	select {
	case <-g.held:
	case <-time.After(time.Minute):
		t.Fatal("no GET /records reached the proxy")
	}
	set := provider.RecordSet{Name: "after." + zone, Type: "A", TTL: 60, Targets: []string{"192.0.2.9"}}
	if err := p.ApplyChanges(ctx(t), zone, []provider.Change{{Action: provider.ActionCreate, After: &set}}); err != nil {
		t.Fatal(err)
	}
	// A bound that only catches a read handed the held listing (it would wait for it forever).
	after, cancel := context.WithTimeout(ctx(t), 30*time.Second)
	defer cancel()
	sets, err := p.ListRecordSets(after, zone)
	if err != nil {
		t.Fatalf("a read after the write: %v (did it wait for the listing held since before the write?)", err)
	}
	if !slices.ContainsFunc(sets, func(rs provider.RecordSet) bool { return rs.Key() == set.Key() }) {
		t.Fatalf("a read after the write lacks %s: it was handed the listing that began before the write", set.Key())
	}
	g.open()
	if err := <-early; err != nil {
		t.Fatal(err)
	}
	if n := g.gets.Load(); n != 2 {
		t.Fatalf("%d GET /records, want 2 (the held one, and the read after the write)", n)
	}
}

// requestLog is an http.RoundTripper that counts the requests it carries by "METHOD /path".
type requestLog struct {
	mu    sync.Mutex
	count map[string]int
}

func (l *requestLog) RoundTrip(req *http.Request) (*http.Response, error) {
	l.mu.Lock()
	if l.count == nil {
		l.count = map[string]int{}
	}
	l.count[req.Method+" "+req.URL.Path]++
	l.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

func (l *requestLog) n(call string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count[call]
}

// TestAdjustEndpoints_ASetHeldAsAdjustedIsNotWrittenAgain: a webhook that normalises endpoints
// (external-dns's server around its in-memory provider, raising TTLs to 120 s and adding a
// provider-specific default) holds a set as it adjusted it. An update from that set back to
// dnsplane's own spelling of it, as a plan makes after reading the zone, is no write: the first
// costs one /adjustendpoints request and no POST /records, the next costs no request at all;
// a real change is still written as the webhook adjusts it.
func TestAdjustEndpoints_ASetHeldAsAdjustedIsNotWrittenAgain(t *testing.T) {
	zone := zoneName("adjusting")
	url := webhooktest.Start(t, nil, "--zone", zone, "--min-ttl", "120", "--set-property", "webhook/proxied=false")
	var log requestLog
	p := newProvider(t, url, webhook.Config{HTTPClient: &http.Client{Transport: &log}})

	want := provider.RecordSet{Name: "www." + zone, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	if err := p.ApplyChanges(ctx(t), zone, []provider.Change{{Action: provider.ActionCreate, After: &want}}); err != nil {
		t.Fatalf("create: %v", err)
	}
	held := func(p *webhook.Provider) provider.RecordSet {
		t.Helper()
		sets, err := p.ListRecordSets(ctx(t), zone)
		if err != nil {
			t.Fatal(err)
		}
		for _, rs := range sets {
			if rs.Key() == want.Key() {
				return rs
			}
		}
		t.Fatalf("%s is not listed", want.Key())
		return provider.RecordSet{}
	}
	cur := held(p)
	if cur.TTL != 120 || cur.ProviderSpecific["webhook/proxied"] != "false" {
		t.Fatalf("the webhook holds %s, want it adjusted (TTL 120, webhook/proxied=false)", cur)
	}

	// The create's /adjustendpoints answer is remembered: dnsplane's spelling over the held set
	// costs nothing.
	adjusts, posts := log.n("POST /adjustendpoints"), log.n("POST /records")
	for range 2 {
		if err := p.ApplyChanges(ctx(t), zone, []provider.Change{{Action: provider.ActionUpdate, Before: &cur, After: &want}}); err != nil {
			t.Fatalf("update to the same set: %v", err)
		}
	}
	if got := log.n("POST /adjustendpoints") - adjusts; got != 0 {
		t.Errorf("%d /adjustendpoints requests for a set the webhook holds as adjusted, want 0 (remembered)", got)
	}
	if got := log.n("POST /records") - posts; got != 0 {
		t.Errorf("%d POST /records for a set the webhook holds as adjusted, want 0", got)
	}

	// A new provider (a restart) remembers nothing: one /adjustendpoints, still no write.
	var log2 requestLog
	m, err := webhook.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	p2 := newProvider(t, url, webhook.Config{HTTPClient: &http.Client{Transport: &log2}, Metrics: m})
	for range 2 {
		if err := p2.ApplyChanges(ctx(t), zone, []provider.Change{{Action: provider.ActionUpdate, Before: &cur, After: &want}}); err != nil {
			t.Fatalf("update after a restart: %v", err)
		}
	}
	if a, w := log2.n("POST /adjustendpoints"), log2.n("POST /records"); a != 1 || w != 0 {
		t.Errorf("after a restart: %d /adjustendpoints and %d POST /records, want 1 and 0", a, w)
	}

	// A real change is written, adjusted.
	changed := want.Clone()
	changed.Targets = []string{"192.0.2.2"}
	if err := p2.ApplyChanges(ctx(t), zone, []provider.Change{{Action: provider.ActionUpdate, Before: &cur, After: &changed}}); err != nil {
		t.Fatalf("update: %v", err)
	}
	if got := held(p2); !slices.Equal(got.Targets, changed.Targets) || got.TTL != 120 {
		t.Errorf("after a change the webhook holds %s, want %v with TTL 120", got, changed.Targets)
	}
	if w := log2.n("POST /records"); w != 1 {
		t.Errorf("%d POST /records for one change, want 1", w)
	}
	// dnsplane_webhook_requests_total counted each request the transport carried.
	for _, c := range []struct{ method, path, code string }{
		{"POST", "/adjustendpoints", "200"}, {"POST", "/records", "204"}, {"GET", "/records", "200"}, {"GET", "/", "200"},
	} {
		got := testutil.ToFloat64(m.Requests.WithLabelValues(c.method, c.path, c.code))
		if want := float64(log2.n(c.method + " " + c.path)); got != want || want == 0 {
			t.Errorf("dnsplane_webhook_requests_total{%s %s %s} = %v, want %v (and not 0)", c.method, c.path, c.code, got, want)
		}
	}
}
