package pdns_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/pdns"
	"github.com/dnsplane/dnsplane/pkg/provider/providertest"
)

type server = pdnstest.Server

func startPDNS(t *testing.T) server { return pdnstest.Start(t) }

func newProvider(t *testing.T, s server, key string) *pdns.Provider {
	t.Helper()
	p, err := pdns.New(pdns.Config{APIURL: s.APIURL, APIKey: key, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// TestConformance runs the provider conformance suite against one real
// PowerDNS, with served answers checked over DNS at once (caches are off).
func TestConformance(t *testing.T) {
	srv := startPDNS(t)
	providertest.Run(t, providertest.Harness{
		New: func(t *testing.T) providertest.Backend {
			return providertest.Backend{
				Provider: newProvider(t, srv, srv.Key),
				Restart:  func(t *testing.T) provider.Provider { return newProvider(t, srv, srv.Key) },
				DNSAddr:  srv.DNSAddr,
			}
		},
		Timeout: 30 * time.Second,
	})
}

func TestRealServer_WrongKeyIsInvalidCredentialsAndNeverLeaksTheKey(t *testing.T) {
	srv := startPDNS(t)
	const wrong = "wrong-secret-key-value"
	p := newProvider(t, srv, wrong)
	_, err := p.ListZones(ctx(t))
	if !errors.Is(err, provider.ErrInvalidCredentials) {
		t.Fatalf("ListZones with a wrong key: %v, want ErrInvalidCredentials", err)
	}
	_, err2 := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: "creds.test", CallerReference: "ref"})
	if !errors.Is(err2, provider.ErrInvalidCredentials) {
		t.Fatalf("EnsureZone with a wrong key: %v, want ErrInvalidCredentials", err2)
	}
	for _, e := range []error{err, err2} {
		if strings.Contains(e.Error(), wrong) || strings.Contains(e.Error(), srv.Key) {
			t.Errorf("error leaks the API key: %v", e)
		}
	}
	// The right key works against the same server.
	if _, err := newProvider(t, srv, srv.Key).ListZones(ctx(t)); err != nil {
		t.Fatalf("ListZones with the right key: %v", err)
	}
}

func TestRealServer_CallerReferenceConflictAndForeignZone(t *testing.T) {
	srv := startPDNS(t)
	p := newProvider(t, srv, srv.Key)
	z, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: "Owned.Example.test.", CallerReference: "uid-a", Tags: map[string]string{"cost-center": "42"}})
	if err != nil {
		t.Fatal(err)
	}
	if z.ID != "owned.example.test." || z.Name != "owned.example.test" || z.CallerReference != "uid-a" {
		t.Fatalf("EnsureZone = %+v", z)
	}
	if len(z.NameServers) != 1 || z.NameServers[0] != "ns1.owned.example.test" {
		t.Errorf("name servers %q, want [ns1.owned.example.test]", z.NameServers)
	}
	got, err := newProvider(t, srv, srv.Key).GetZone(ctx(t), z.ID)
	if err != nil || got.CallerReference != "uid-a" || got.Tags["cost-center"] != "42" {
		t.Fatalf("GetZone on a new instance = %+v, %v; want caller reference and tags from metadata", got, err)
	}
	if _, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: "owned.example.test", CallerReference: "uid-b"}); !errors.Is(err, provider.ErrZoneConflict) {
		t.Fatalf("EnsureZone with another caller reference: %v, want ErrZoneConflict", err)
	}

	// A zone created outside dnsplane (no account, no metadata) is foreign.
	if code, body := srv.API(t, http.MethodPost, "/zones", `{"name":"foreign.example.test.","kind":"Native","nameservers":["ns.elsewhere.test."]}`); code != http.StatusCreated {
		t.Fatalf("creating a foreign zone by hand: HTTP %d %s", code, body)
	}
	if _, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: "foreign.example.test", CallerReference: "uid-a"}); !errors.Is(err, provider.ErrZoneConflict) {
		t.Fatalf("EnsureZone over a foreign zone: %v, want ErrZoneConflict", err)
	}
	zones, err := p.ListZones(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	refs := map[string]string{}
	for _, lz := range zones {
		refs[lz.Name] = lz.CallerReference
	}
	if len(zones) != 2 || refs["owned.example.test"] != "uid-a" || refs["foreign.example.test"] != "" {
		t.Fatalf("ListZones = %+v", zones)
	}

	// A crash after the zone was created (with its account) but before its
	// metadata was written: EnsureZone with the same reference adopts it and
	// completes the metadata; another reference is still a conflict.
	if code, body := srv.API(t, http.MethodPost, "/zones", `{"name":"crashed.example.test.","kind":"Native","nameservers":["ns1.crashed.example.test."],"account":"uid-c"}`); code != http.StatusCreated {
		t.Fatalf("creating a half-made zone by hand: HTTP %d %s", code, body)
	}
	if _, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: "crashed.example.test", CallerReference: "uid-other"}); !errors.Is(err, provider.ErrZoneConflict) {
		t.Fatalf("EnsureZone of a half-made zone with another reference: %v, want ErrZoneConflict", err)
	}
	cz, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: "crashed.example.test", CallerReference: "uid-c"})
	if err != nil || cz.ID != "crashed.example.test." || cz.CallerReference != "uid-c" {
		t.Fatalf("EnsureZone of a half-made zone = %+v, %v", cz, err)
	}
	if code, body := srv.API(t, http.MethodGet, "/zones/crashed.example.test./metadata/"+pdns.MetaCallerReference, ""); code != http.StatusOK || !strings.Contains(body, `"uid-c"`) {
		t.Fatalf("caller reference metadata after repair: HTTP %d %s", code, body)
	}
}

func TestRealServer_ConfiguredNameServersAndApexNS(t *testing.T) {
	srv := startPDNS(t)
	p, err := pdns.New(pdns.Config{APIURL: srv.APIURL + "/", APIKey: srv.Key, Nameservers: []string{"NS1.Provider.test.", "ns2.provider.test"}})
	if err != nil {
		t.Fatal(err)
	}
	z, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: "ns.example.test", CallerReference: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(z.NameServers, ",") != "ns1.provider.test,ns2.provider.test" {
		t.Errorf("name servers %q", z.NameServers)
	}
	sets, err := p.ListRecordSets(ctx(t), z.ID)
	if err != nil {
		t.Fatal(err)
	}
	var soa, ns bool
	for _, rs := range sets {
		switch {
		case rs.Name == "ns.example.test" && rs.Type == "SOA":
			soa = true
		case rs.Name == "ns.example.test" && rs.Type == "NS":
			ns = len(rs.Targets) == 2
		}
	}
	if !soa || !ns {
		t.Errorf("ListRecordSets lacks the apex SOA or NS: %v", sets)
	}
}

// fake answers every request with one status and body.
func fake(t *testing.T, status int, header map[string]string, body string) *pdns.Provider {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(ts.Close)
	p, err := pdns.New(pdns.Config{APIURL: ts.URL, APIKey: "fake-secret-key"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStatusMapping(t *testing.T) {
	rs := provider.RecordSet{Name: "www.z.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	apply := func(p *pdns.Provider) error {
		return p.ApplyChanges(ctx(t), "z.test.", []provider.Change{{Action: provider.ActionCreate, After: &rs}})
	}
	for _, tc := range []struct {
		status int
		header map[string]string
		body   string
		want   error
	}{
		{401, nil, "Unauthorized", provider.ErrInvalidCredentials},
		{403, nil, "Forbidden", provider.ErrInvalidCredentials},
		{404, nil, "Not Found", provider.ErrZoneNotFound},
		{422, nil, `{"error": "RRset www.z.test. IN CNAME: Conflicts with pre-existing RRset"}`, provider.ErrInvalidChange},
		{429, map[string]string{"Retry-After": "7"}, "", provider.ErrThrottled},
		{503, nil, "", provider.ErrThrottled},
		// A busy sqlite backend: backed off as throttling, never taken as a rejection.
		{500, nil, `{"error": "Updating RRsets: database is locked"}`, provider.ErrThrottled},
		{502, nil, "Bad Gateway", provider.ErrThrottled},
		{400, nil, `{"error": "bad request"}`, provider.ErrInvalidChange},
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			err := apply(fake(t, tc.status, tc.header, tc.body))
			if !errors.Is(err, tc.want) {
				t.Fatalf("HTTP %d: %v, want %v", tc.status, err, tc.want)
			}
			if strings.Contains(err.Error(), "fake-secret-key") {
				t.Errorf("error leaks the key: %v", err)
			}
			if tc.status == 422 && !strings.Contains(err.Error(), "Conflicts with pre-existing RRset") {
				t.Errorf("422 error lacks PowerDNS' message: %v", err)
			}
			if tc.status >= 500 && errors.Is(err, provider.ErrInvalidChange) {
				t.Errorf("HTTP %d taken as a rejection: %v", tc.status, err)
			}
			if tc.status == 429 {
				if d, ok := provider.RetryAfter(err); !ok || d != 7*time.Second {
					t.Errorf("RetryAfter = %v, %v; want 7s", d, ok)
				}
			}
		})
	}
}

// TestCapabilities_OneWriteInFlightByDefault: PowerDNS declares one PATCH at a time unless
// Config.MaxWritesInFlight (the Secret key PDNS_MAX_WRITES_IN_FLIGHT) raises it.
func TestCapabilities_OneWriteInFlightByDefault(t *testing.T) {
	for _, tc := range []struct{ set, want int }{{0, pdns.DefaultMaxWritesInFlight}, {-1, 1}, {4, 4}} {
		p, err := pdns.New(pdns.Config{APIURL: "http://127.0.0.1:1", APIKey: "k", MaxWritesInFlight: tc.set})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Capabilities().MaxWritesInFlight; got != tc.want {
			t.Errorf("MaxWritesInFlight %d: Capabilities says %d, want %d", tc.set, got, tc.want)
		}
	}
	if pdns.DefaultMaxWritesInFlight != 1 {
		t.Errorf("DefaultMaxWritesInFlight = %d, want 1 (sqlite takes one write at a time)", pdns.DefaultMaxWritesInFlight)
	}
}

func TestRequestsHaveATimeout(t *testing.T) {
	block := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(block); ts.Close() })
	p, err := pdns.New(pdns.Config{APIURL: ts.URL, APIKey: "k", Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = p.ListZones(context.Background())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ListZones against a hung server: %v, want a deadline error", err)
	}
	// Order, not speed: the request ended by Config.Timeout (200 ms), before DefaultTimeout
	// (30 s, what a Timeout left unapplied would give) could end it.
	d := time.Since(start)
	t.Logf("ListZones against a hung server ended after %s (Timeout 200 ms)", d.Round(time.Millisecond))
	if d >= pdns.DefaultTimeout {
		t.Fatalf("the request took %s: Config.Timeout was not applied", d)
	}
}

func TestNew_RejectsMalformedConfig(t *testing.T) {
	for _, cfg := range []pdns.Config{
		{APIURL: "", APIKey: "k"},
		{APIURL: "ftp://x", APIKey: "k"},
		{APIURL: "http://127.0.0.1:8081", APIKey: ""},
		{APIURL: "http://127.0.0.1:8081", APIKey: "k", Nameservers: []string{"bad name"}},
	} {
		if _, err := pdns.New(cfg); !errors.Is(err, provider.ErrInvalidCredentials) {
			t.Errorf("New(%+v): %v, want ErrInvalidCredentials", cfg, err)
		}
	}
}

// TestRealServer_MalformedTargetIsInvalidChangeBeforeAnyRequest: a malformed target on
// PowerDNS: a DS with a 65-digit digest got HTTP 422 (ProviderError) from the server. The
// provider now refuses it with ErrInvalidChange without sending anything, and the well-formed
// DS of the same batch shape is accepted by the real server.
func TestRealServer_MalformedTargetIsInvalidChangeBeforeAnyRequest(t *testing.T) {
	srv := startPDNS(t)
	upstream, err := url.Parse(srv.APIURL)
	if err != nil {
		t.Fatal(err)
	}
	var sent atomic.Int64
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	p, err := pdns.New(pdns.Config{APIURL: ts.URL, APIKey: srv.Key, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	z, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: "ds.example.test", CallerReference: "uid-ds"})
	if err != nil {
		t.Fatal(err)
	}
	const digest = "3d6f0f8a1b2c3d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccd"
	ds := func(target string) []provider.Change {
		rs := provider.RecordSet{Name: "sub.ds.example.test", Type: "DS", TTL: 300, Targets: []string{target}}
		return []provider.Change{{Action: provider.ActionCreate, After: &rs}}
	}
	sent.Store(0)
	err = p.ApplyChanges(ctx(t), z.ID, ds("12345 13 2 "+digest+"d"))
	if !errors.Is(err, provider.ErrInvalidChange) {
		t.Fatalf("ApplyChanges with a 65-digit DS digest: %v, want ErrInvalidChange", err)
	}
	if n := sent.Load(); n != 0 {
		t.Fatalf("%d requests sent for a change the provider must refuse itself", n)
	}
	if err := p.ApplyChanges(ctx(t), z.ID, ds("12345 13 2 "+digest)); err != nil {
		t.Fatalf("the well-formed DS: %v", err)
	}
}

// TestRealServer_ABigWriteIsSplitUnderTheServersBodySize: 6,000 TXT sets with 400-byte values
// are about 3 MB of rrset JSON, over PowerDNS's default webserver-max-bodysize (2 MB), which
// refuses such a PATCH whole. Through the guard, RequestCost splits the write into PATCHes
// under Config.MaxRequestBytes, and every set is written.
func TestRealServer_ABigWriteIsSplitUnderTheServersBodySize(t *testing.T) {
	s := startPDNS(t)
	p := newProvider(t, s, s.Key)
	z, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: "big.pdns.test", CallerReference: "big"})
	if err != nil {
		t.Fatal(err)
	}
	value := strings.Repeat("v", 400)
	changes := make([]provider.Change, 0, 6000)
	total := 0
	for i := range 6000 {
		rs := provider.RecordSet{Name: fmt.Sprintf("t%d.big.pdns.test", i), Type: "TXT", TTL: 60, Targets: []string{value}}
		ch := provider.Change{Action: provider.ActionCreate, After: &rs}
		_, b := p.RequestCost(ch)
		total += b
		changes = append(changes, ch)
	}
	if total <= 2_000_000 {
		t.Fatalf("the write is %d bytes of rrset JSON, want it over PowerDNS's 2 MB so that the test means something", total)
	}
	if c := p.Capabilities().MaxValueBytesPerBatch; c != pdns.DefaultMaxRequestBytes {
		t.Fatalf("MaxValueBytesPerBatch = %d, want DefaultMaxRequestBytes", c)
	}
	g := providertest.Guarded(p)
	if err := g.ApplyChanges(ctx(t), z.ID, changes); err != nil {
		t.Fatalf("ApplyChanges of %d bytes: %v", total, err)
	}
	sets, err := p.ListRecordSets(ctx(t), z.ID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, rs := range sets {
		if rs.Type == "TXT" {
			n++
		}
	}
	if n != 6000 {
		t.Fatalf("%d TXT sets written, want 6000", n)
	}
}
