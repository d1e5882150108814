package controllers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/conditions"
	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
	dnsprovider "github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/counting"
	"github.com/dnsplane/dnsplane/pkg/provider/pdns"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

// httpCounter is a reverse proxy in front of the PowerDNS API that counts the requests it
// passes, by method and kind ("GET zone", "GET zone?rrset_name", "GET metadata", "PATCH zone",
// ...), as the bench's counting proxy does; a response that is not 2xx is also counted under
// its status ("PATCH zone 500"). With oneWrite it passes one PATCH at a time, as a provider
// limited to one write in flight would send them.
type httpCounter struct {
	oneWrite bool
	writes   sync.Mutex
	mu       sync.Mutex
	n        map[string]int
}

// statusRecorder keeps the status code an http.Handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) { s.code = code; s.ResponseWriter.WriteHeader(code) }

func (h *httpCounter) start(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		what := r.Method + " " + requestKind(r)
		if h.oneWrite && r.Method == http.MethodPatch {
			h.writes.Lock()
			defer h.writes.Unlock()
		}
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		proxy.ServeHTTP(rec, r)
		h.mu.Lock()
		h.n[what]++
		if rec.code/100 != 2 {
			h.n[what+" "+strconv.Itoa(rec.code)]++
		}
		h.mu.Unlock()
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// requestKind names a PowerDNS API path without its zone: "zones", "zone", "zone?rrset_name",
// "metadata".
func requestKind(r *http.Request) string {
	_, rest, _ := strings.Cut(r.URL.Path, "/zones")
	switch {
	case rest == "" || rest == "/":
		return "zones"
	case strings.Contains(rest, "/metadata"):
		return "metadata"
	case r.URL.Query().Has("rrset_name"):
		return "zone?rrset_name"
	}
	return "zone"
}

func (h *httpCounter) take() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.n
	h.n = map[string]int{}
	return out
}

func formatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, m[k])
	}
	return strings.TrimSpace(b.String())
}

// TestPowerDNS_FirstSyncReadsEachZoneOnce measures the first sync against a real PowerDNS
// (caches off) behind a counting proxy: DNSPLANE_FIRSTSYNC_OBJECTS DNSEndpoints (default 100)
// of 10 A endpoints each, one in each of 10 zones that exist in PowerDNS and are adopted by
// zoneID, all present when a fresh manager starts. It logs the HTTP requests by kind and the
// provider calls by operation until every record is served and every object is Ready. It
// pins what does not depend on timing: every GET is a provider read (ListRecordSets, or the
// adoption's read of the zone) or ApplyChanges' one check before a PATCH that creates sets
// that they are still absent (no read-merge-write: DNSEndpoint sets are single owner), and
// each zone is listed at most once unless a write failed.
// The number of PATCHes depends on how the zone writers batch and is only logged. With
// DNSPLANE_FIRSTSYNC_ONE_WRITE=1 the proxy passes one PATCH at a time (PowerDNS on sqlite takes
// one write at a time and answers overlapping ones 500 "database is locked"). The DNSZones are
// created with the objects, so their adoption (one GET of each zone, which is also the writer's
// first view) is part of the first sync, as in `make bench`; with DNSPLANE_FIRSTSYNC_NEW_ZONES=0
// they are available before the manager restarts, and each writer lists its zone once.
func TestPowerDNS_FirstSyncReadsEachZoneOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("scale test: skipped with -short")
	}
	objects := 100
	if s := os.Getenv("DNSPLANE_FIRSTSYNC_OBJECTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("DNSPLANE_FIRSTSYNC_OBJECTS=%q: want a positive integer", s)
		}
		objects = n
	}
	const zones, ns = 10, "apps"
	srv := pdnstest.Start(t)
	counter := &httpCounter{n: map[string]int{}, oneWrite: os.Getenv("DNSPLANE_FIRSTSYNC_ONE_WRITE") == "1"}
	apiURL := counter.start(t, srv.APIURL)
	direct, err := pdns.New(pdns.Config{APIURL: srv.APIURL, APIKey: srv.Key})
	if err != nil {
		t.Fatal(err)
	}
	zoneName := func(i int) string { return fmt.Sprintf("z%d.first.test", i) }
	for i := range zones {
		spec := dnsprovider.ZoneSpec{Name: zoneName(i), CallerReference: "platform", Tags: nil}
		if _, err := direct.EnsureZone(ctxT(t), spec); err != nil {
			t.Fatal(err)
		}
	}
	c := startCluster(t, "first", 30*time.Second, 5*time.Minute)
	c.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dns"}, Type: "dnsplane.io/pdns",
			StringData: map[string]string{"PDNS_API_URL": apiURL, "PDNS_API_KEY": srv.Key, "DNS_ADDRESS": srv.DNSAddr}})
	newZones := os.Getenv("DNSPLANE_FIRSTSYNC_NEW_ZONES") != "0"
	kc, err := client.New(c.cfg, client.Options{Scheme: c.scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if newZones {
		c.stopManager()
	}
	for i := range zones {
		z := zoneObj(ns, fmt.Sprintf("z%d", i), zoneName(i), func(z *dnsv1.DNSZone) { z.Spec.ZoneID = pdns.ZoneID(zoneName(i)) })
		if err := kc.Create(ctxT(t), z); err != nil {
			t.Fatal(err)
		}
		if !newZones {
			c.waitCondition(z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, time.Minute)
		}
	}

	// The objects exist when the manager starts, as after a restart or an upgrade (with
	// DNSPLANE_FIRSTSYNC_NEW_ZONES=1, their DNSZones too, never synced yet).
	c.stopManager()
	createEndpoints(t, kc, ns, objects, zones, zoneName)
	counter.take()
	start := time.Now()
	c.startManager()
	eventually(t, 5*time.Minute, "every record served by PowerDNS", func() error {
		return allServed(ctxT(t), direct, zones, zoneName, objects)
	})
	served := time.Since(start)
	eventually(t, 5*time.Minute, "every DNSEndpoint Ready", func() error { return allEndpointsReady(ctxT(t), kc, ns, objects) })
	ready := time.Since(start)
	got := counter.take()
	op := func(name string) int {
		n := 0
		for _, code := range []string{counting.CodeOK, counting.CodeError, counting.CodeThrottled, counting.CodeConflict, counting.CodeTimeout} {
			n += int(testutil.ToFloat64(c.requests.WithLabelValues("pdns", name, code)))
		}
		return n
	}
	lists, gets, applies, failedApplies := op(counting.OpListRecordSets), op(counting.OpGetZone), op(counting.OpApplyChanges),
		applyFailures(c)
	t.Logf("first sync, %d objects x 10 endpoints over %d zones: all served after %s, all Ready after %s", objects, zones, served.Round(time.Millisecond), ready.Round(time.Millisecond))
	t.Logf("HTTP requests: %s", formatCounts(got))
	t.Logf("provider calls: ListRecordSets=%d GetZone=%d ApplyChanges=%d (failed %d)", lists, gets, applies, failedApplies)

	// The GETs that are not provider reads are ApplyChanges' check that the sets it creates are
	// still absent: one per PATCH at most (none when the zone was read at
	// most PDNS_CLAIM_READ_MAX_AGE before: pdns.Config.ClaimReadMaxAge), never a
	// read-merge-write of single-owner sets (a second GET, after the PATCH).
	if hidden := got["GET zone"] + got["GET zone?rrset_name"] - lists - gets; hidden < 0 || hidden > got["PATCH zone"] {
		t.Errorf("%d GETs of a zone are not provider reads, for %d PATCHes: want at most one per PATCH", hidden, got["PATCH zone"])
	}
	if failedApplies == 0 && lists > zones {
		t.Errorf("%d zone listings for %d zones with no failed write: want at most one per zone", lists, zones)
	}
	// The objects were all there at start: the zone writers hold their flushes until the first
	// pass planned every one (warmup.Tracker, zonewriter.Options.Warming), so each zone is one
	// PATCH while its changes fit one batch (small early writes cost calls).
	if perZone := 2 * objects; failedApplies == 0 && perZone <= zonewriter.DefaultMaxPending && got["PATCH zone"] > zones {
		t.Errorf("%d PATCHes for %d zones of %d changes each, all known at start: want one per zone", got["PATCH zone"], zones, perZone)
	}
	// Adopting a zone by zoneID is one GET of the zone, whose rrsets are the writer's first view
	// (provider.ZoneReader, zonewriter.Writer.Seed): no metadata read, and no listing after it
	// (three reads where the floor is one).
	if newZones && failedApplies == 0 {
		if got["GET metadata"] != 0 || gets+lists > zones {
			t.Errorf("adopting %d zones and planning against them cost %d zone reads, %d listings and %d metadata reads: want one read per zone in all",
				zones, gets, lists, got["GET metadata"])
		}
	}
}

// createEndpoints creates objects DNSEndpoints of 10 A endpoints each, endpoint j in zone j.
func createEndpoints(t *testing.T, kc client.Client, ns string, objects, zones int, zoneName func(int) string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, objects)
	for w := range 10 {
		wg.Go(func() {
			for i := w; i < objects; i += 10 {
				ep := endpointObj(ns, fmt.Sprintf("app%d", i))
				for j := range zones {
					ep.Spec.Endpoints = append(ep.Spec.Endpoints, dnsv1.Endpoint{DNSName: fmt.Sprintf("h%d.%s", i, zoneName(j)),
						RecordType: "A", Targets: dnsv1.Targets{fmt.Sprintf("10.%d.%d.%d", j, i/250, i%250)}})
				}
				if err := kc.Create(ctxT(t), ep); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// allServed checks that PowerDNS holds every object's A record in every zone.
func allServed(ctx context.Context, p dnsprovider.Provider, zones int, zoneName func(int) string, objects int) error {
	for j := range zones {
		sets, err := p.ListRecordSets(ctx, pdns.ZoneID(zoneName(j)))
		if err != nil {
			return err
		}
		n := 0
		for _, rs := range sets {
			if rs.Type == "A" {
				n++
			}
		}
		if n != objects {
			return fmt.Errorf("zone %s: %d of %d A records", zoneName(j), n, objects)
		}
	}
	return nil
}

func allEndpointsReady(ctx context.Context, kc client.Client, ns string, objects int) error {
	ready, err := conditions.CountReady(ctx, kc, []client.ListOption{client.InNamespace(ns)}, &dnsv1.DNSEndpointList{})
	if err != nil {
		return err
	}
	if ready != objects {
		return fmt.Errorf("%d of %d Ready", ready, objects)
	}
	return nil
}

// applyFailures counts the manager's ApplyChanges calls that did not succeed.
func applyFailures(c *cluster) int {
	n := 0
	for _, code := range []string{counting.CodeError, counting.CodeThrottled, counting.CodeConflict, counting.CodeTimeout} {
		n += int(testutil.ToFloat64(c.requests.WithLabelValues("pdns", counting.OpApplyChanges, code)))
	}
	return n
}
