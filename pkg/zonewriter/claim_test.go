package zonewriter_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/bindtest"
	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
	"github.com/dnsplane/dnsplane/pkg/plan"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
	"github.com/dnsplane/dnsplane/pkg/provider/pdns"
	"github.com/dnsplane/dnsplane/pkg/registry"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

// claimBackend is a real provider holding one zone: p is dnsplane's (its writer's), ext the
// client external-dns writes with, requests the HTTP requests p sent since the last call (nil
// when p does not speak HTTP).
type claimBackend struct {
	zone, zoneID string
	p, ext       provider.Provider
	requests     func() map[string]int
}

// TestFirstWrite_MeetsAnExternalDNSClaim: external-dns claims a name (its
// registry TXT and the record set, in one write) after dnsplane's writer read the zone and
// before dnsplane's first write of that name. On every real backend the write that meets the
// claim fails with provider.ErrConflict and writes nothing: external-dns' set keeps its value
// and no registry record of dnsplane's lands. The writer drops its view, so the immediate retry
// (a reconcile requeues at once on ErrConflict) plans against a fresh read and reports the name
// as held by that external-dns owner. The embedded server and BIND (RFC 2136 prerequisites)
// refuse the Create by their conditional writes; PowerDNS has none, so its provider reads the
// created sets' names just before its PATCH (one GET, counted here) and refuses a Create of a
// set that exists.
func TestFirstWrite_MeetsAnExternalDNSClaim(t *testing.T) {
	backends := map[string]func(t *testing.T) claimBackend{
		"local": func(t *testing.T) claimBackend {
			store := zonedb.NewStore(zonedb.StoreOptions{Dir: t.TempDir()})
			p := local.New(store, local.Options{})
			z, err := p.EnsureZone(ctxT(t), provider.ZoneSpec{Name: "claim.test", CallerReference: "claim"})
			if err != nil {
				t.Fatal(err)
			}
			return claimBackend{zone: "claim.test", zoneID: z.ID, p: p, ext: p}
		},
		"rfc2136": func(t *testing.T) claimBackend {
			s := bindtest.Start(t)
			zone := s.AddZone(t, "claim")
			return claimBackend{zone: zone, zoneID: zone, p: s.Provider(t, s.Secret), ext: s.Provider(t, s.Secret)}
		},
		"pdns": func(t *testing.T) claimBackend {
			srv := pdnstest.Start(t)
			counter, apiURL := newLockingProxy(t, srv.APIURL) // one writer: it only counts
			p, err := pdns.New(pdns.Config{APIURL: apiURL, APIKey: srv.Key, Timeout: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			ext, err := pdns.New(pdns.Config{APIURL: srv.APIURL, APIKey: srv.Key, Timeout: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			z, err := p.EnsureZone(ctxT(t), provider.ZoneSpec{Name: "claim.test", CallerReference: "claim"})
			if err != nil {
				t.Fatal(err)
			}
			last := counter.figures()
			since := func() map[string]int {
				f := counter.figures()
				out := map[string]int{}
				for m, n := range map[string]int{http.MethodGet: f.gets - last.gets, http.MethodPatch: f.patches - last.patches, "other": (f.requests - f.gets - f.patches) - (last.requests - last.gets - last.patches)} {
					if n > 0 {
						out[m] = n
					}
				}
				last = f
				return out
			}
			return claimBackend{zone: "claim.test", zoneID: z.ID, p: p, ext: ext, requests: since}
		},
	}
	for _, name := range []string{"local", "rfc2136", "pdns"} {
		for _, mode := range []plan.Mode{plan.SingleOwner, plan.Shared} {
			t.Run(name+"/"+mode.String(), func(t *testing.T) {
				b := backends[name](t)
				testFirstWriteMeetsClaim(t, b, mode)
			})
		}
	}
}

func testFirstWriteMeetsClaim(t *testing.T, b claimBackend, mode plan.Mode) {
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	w := zonewriter.New(ctx, b.p, b.zoneID, zonewriter.Options{})
	kind := "DNSEndpoint"
	if mode == plan.Shared {
		kind = "DNSRecord"
	}
	self := registry.Contributor{OwnerID: "dnsplane", Resource: kind + "/default/www"}
	www := provider.RecordSet{Name: "www." + b.zone, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	// Another name of the zone: the writer's view is loaded and in use before the claim.
	other := provider.RecordSet{Name: "other." + b.zone, Type: "A", TTL: 60, Targets: []string{"192.0.2.2"}}
	compute := func(desired ...provider.RecordSet) plan.Result {
		t.Helper()
		snap, err := w.Snapshot(ctx, b.zone)
		if err != nil {
			t.Fatal(err)
		}
		return plan.Compute(plan.Input{Zone: b.zone, Self: self, Mode: mode, Desired: desired, Snapshot: snap})
	}
	if err := w.Apply(ctx, compute(other).Changes); err != nil {
		t.Fatalf("writing %s: %v", other.Key(), err)
	}
	planned := compute(other, www) // the name is free in the view
	if len(planned.Conflicts) > 0 || len(planned.Changes) != 2 {
		t.Fatalf("plan before the claim: %d changes, conflicts %v; want the claim and the set", len(planned.Changes), planned.Conflicts)
	}

	// external-dns claims the name: its registry record and its set, in one write.
	extTXT := provider.RecordSet{Name: "a-www." + b.zone, Type: "TXT", TTL: 300,
		Targets: []string{"heritage=external-dns,external-dns/owner=ext,external-dns/resource=service/default/www"}}
	extSet := provider.RecordSet{Name: www.Name, Type: "A", TTL: 300, Targets: []string{"198.51.100.7"}}
	if err := b.ext.ApplyChanges(ctx, b.zoneID, []provider.Change{
		{Action: provider.ActionCreate, After: &extTXT}, {Action: provider.ActionCreate, After: &extSet}}); err != nil {
		t.Fatalf("external-dns' write: %v", err)
	}

	if b.requests != nil {
		b.requests()
	}
	err := w.Apply(ctx, planned.Changes)
	var sent map[string]int
	if b.requests != nil {
		sent = b.requests()
		t.Logf("the write that met the claim sent %v", sent)
	}
	if !errors.Is(err, provider.ErrConflict) {
		t.Fatalf("the first write of %s after external-dns claimed it: %v; want ErrConflict", www.Key(), err)
	}
	if sent != nil && (sent[http.MethodGet] != 1 || sent[http.MethodPatch] != 0 || len(sent) != 1) {
		t.Errorf("the refused write sent %v; want 1 GET (the check before the PATCH) and no PATCH", sent)
	}
	sets, err := b.ext.ListRecordSets(ctx, b.zoneID)
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range sets {
		switch {
		case rs.Key() == www.Key() && !slices.Equal(rs.Targets, extSet.Targets):
			t.Errorf("external-dns' set was overwritten: %s = %v, want %v", rs.Key(), rs.Targets, extSet.Targets)
		case registry.IsRegistryName(rs.Name) && strings.Contains(rs.Name, "www"):
			t.Errorf("dnsplane's registry record %s landed although its set was refused", rs.Name)
		}
	}

	// The immediate retry: the writer dropped its view, so this plans against a fresh read.
	retry := compute(other, www)
	if len(retry.Changes) != 0 || len(retry.Conflicts) != 1 || retry.Conflicts[0].Key != www.Key() ||
		retry.Conflicts[0].Reason != plan.ReasonOwnershipConflict || !strings.Contains(retry.Conflicts[0].Message, "external-dns owner ext") {
		t.Fatalf("the retry planned %d changes, conflicts %+v; want only %s held by external-dns owner ext", len(retry.Changes), retry.Conflicts, www.Key())
	}
}
