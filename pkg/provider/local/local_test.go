package local_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
	"github.com/dnsplane/dnsplane/pkg/provider/providertest"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// env is a store persisted in a temp dir, served on 127.0.0.1:<ephemeral>.
type env struct {
	dir   string
	store *zonedb.Store
	addr  string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	store := zonedb.NewStore(zonedb.StoreOptions{Dir: dir, NameServerAddrs: []netip.Addr{netip.MustParseAddr("127.0.0.1")}})
	if err := store.Load(); err != nil {
		t.Fatal(err)
	}
	return &env{dir: dir, store: store, addr: dnstest.Serve(t, store)}
}

// restart opens a new store over the same directory, as a new manager would.
func (e *env) restart(t *testing.T) *zonedb.Store {
	t.Helper()
	s := zonedb.NewStore(zonedb.StoreOptions{Dir: e.dir, NameServerAddrs: []netip.Addr{netip.MustParseAddr("127.0.0.1")}})
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLocal_Conformance(t *testing.T) {
	providertest.Run(t, providertest.Harness{
		New: func(t *testing.T) providertest.Backend {
			e := newEnv(t)
			return providertest.Backend{
				Provider: local.New(e.store, local.Options{}),
				Restart:  func(t *testing.T) provider.Provider { return local.New(e.restart(t), local.Options{}) },
				DNSAddr:  e.addr,
			}
		},
	})
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func query(t *testing.T, addr, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	c := &dns.Client{Net: "tcp"}
	resp, _, err := c.ExchangeContext(ctx(t), m, addr)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestLocal_FaultAfterZoneCreateLeavesAZoneThatEnsureFindsAgain(t *testing.T) {
	e := newEnv(t)
	crash := errors.New("simulated crash")
	var armed atomic.Bool
	armed.Store(true)
	p := local.New(e.store, local.Options{FaultHook: func(_ context.Context, point local.FaultPoint, zone string) error {
		if point == local.FaultAfterZoneCreate && zone == "c1.example.test" && armed.CompareAndSwap(true, false) {
			return crash
		}
		return nil
	}})
	spec := provider.ZoneSpec{Name: "c1.example.test", CallerReference: "uid-1"}
	if _, err := p.EnsureZone(ctx(t), spec); !errors.Is(err, crash) {
		t.Fatalf("EnsureZone = %v, want the injected fault", err)
	}
	// The zone exists and is served although the call failed.
	if resp := query(t, e.addr, "c1.example.test", dns.TypeSOA); !resp.Authoritative || len(resp.Answer) != 1 {
		t.Fatalf("zone not served after the fault: %v", resp)
	}
	// A new manager (new store over the same files) finds it again.
	p2 := local.New(e.restart(t), local.Options{})
	z, err := p2.EnsureZone(ctx(t), spec)
	if err != nil || z.ID != "c1.example.test" {
		t.Fatalf("EnsureZone after the crash = %+v, %v", z, err)
	}
	zones, _ := p2.ListZones(ctx(t))
	if len(zones) != 1 {
		t.Fatalf("%d zones, want 1", len(zones))
	}
}

func TestLocal_FaultBeforeApplyChangesWritesNothing_AfterWritesEverything(t *testing.T) {
	e := newEnv(t)
	var fail atomic.Value // FaultPoint to fail at
	fail.Store(local.FaultPoint(""))
	p := local.New(e.store, local.Options{FaultHook: func(_ context.Context, point local.FaultPoint, _ string) error {
		if point == fail.Load().(local.FaultPoint) {
			return errors.New("injected")
		}
		return nil
	}})
	z, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: "f.test", CallerReference: "r"})
	if err != nil {
		t.Fatal(err)
	}
	rs := provider.RecordSet{Name: "www.f.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	fail.Store(local.FaultBeforeApplyChanges)
	if err := p.ApplyChanges(ctx(t), z.ID, []provider.Change{{Action: provider.ActionCreate, After: &rs}}); err == nil {
		t.Fatal("no error from the before fault")
	}
	if resp := query(t, e.addr, "www.f.test", dns.TypeA); len(resp.Answer) != 0 {
		t.Fatalf("written despite the before fault: %v", resp.Answer)
	}
	fail.Store(local.FaultAfterApplyChanges)
	if err := p.ApplyChanges(ctx(t), z.ID, []provider.Change{{Action: provider.ActionCreate, After: &rs}}); err == nil {
		t.Fatal("no error from the after fault")
	}
	if resp := query(t, e.addr, "www.f.test", dns.TypeA); len(resp.Answer) != 1 {
		t.Fatalf("not written before the after fault: %v", resp)
	}
}

func TestLocal_NewZoneHasNS1WithGlueToTheListenIP(t *testing.T) {
	e := newEnv(t)
	p := local.New(e.store, local.Options{})
	z, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: "Glue.Test.", CallerReference: "r", Tags: map[string]string{"team": "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if z.ID != "glue.test" || z.Name != "glue.test" || !slices.Equal(z.NameServers, []string{"ns1.glue.test"}) || z.Tags["team"] != "a" {
		t.Fatalf("zone %+v", z)
	}
	resp := query(t, e.addr, "glue.test", dns.TypeNS)
	if len(resp.Answer) != 1 || resp.Answer[0].(*dns.NS).Ns != "ns1.glue.test." {
		t.Fatalf("NS answer %v", resp.Answer)
	}
	if len(resp.Extra) != 1 || resp.Extra[0].(*dns.A).A.String() != "127.0.0.1" {
		t.Fatalf("glue %v, want ns1.glue.test A 127.0.0.1", resp.Extra)
	}
}

func TestLocal_ZoneIDsAreCanonicalNames(t *testing.T) {
	e := newEnv(t)
	p := local.New(e.store, local.Options{})
	if _, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: "ids.test", CallerReference: "r"}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.GetZone(ctx(t), "ids.test"); err != nil {
		t.Fatalf("GetZone(canonical): %v", err)
	}
	for _, id := range []string{"IDS.test", "ids.test.", "", "other.test"} {
		if _, err := p.GetZone(ctx(t), id); !errors.Is(err, provider.ErrZoneNotFound) {
			t.Errorf("GetZone(%q) = %v, want ErrZoneNotFound", id, err)
		}
	}
}

func TestLocal_ZoneWithoutCallerReferenceIsAConflict(t *testing.T) {
	e := newEnv(t)
	// A hand-written master file, no sidecar: not ours.
	content := "hand.test. 300 IN SOA ns1.hand.test. hostmaster.hand.test. 1 3600 600 86400 60\n"
	if err := os.WriteFile(filepath.Join(e.dir, "hand.test.zone"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	p := local.New(e.restart(t), local.Options{})
	if _, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: "hand.test", CallerReference: "r"}); !errors.Is(err, provider.ErrZoneConflict) {
		t.Fatalf("EnsureZone over a foreign zone: %v, want ErrZoneConflict", err)
	}
	// It can still be adopted by ID.
	if _, err := p.GetZone(ctx(t), "hand.test"); err != nil {
		t.Fatal(err)
	}
}

func TestLocal_ProviderSpecificAndWeightsSurviveRestart(t *testing.T) {
	e := newEnv(t)
	p := local.New(e.store, local.Options{})
	z, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: "ps.test", CallerReference: "r"})
	if err != nil {
		t.Fatal(err)
	}
	w := int64(5)
	sets := []provider.RecordSet{
		{Name: "a.ps.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}, ProviderSpecific: map[string]string{"aws/evaluate-target-health": "true"}},
		{Name: "b.ps.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.2"}, SetIdentifier: "x", Weight: &w, ProviderSpecific: map[string]string{"k": "v"}},
	}
	var ch []provider.Change
	for i := range sets {
		ch = append(ch, provider.Change{Action: provider.ActionCreate, After: &sets[i]})
	}
	if err := p.ApplyChanges(ctx(t), z.ID, ch); err != nil {
		t.Fatal(err)
	}
	listed, err := local.New(e.restart(t), local.Options{}).ListRecordSets(ctx(t), z.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range sets {
		found := false
		for _, got := range listed {
			if got.Key() == want.Key() {
				found = got.Equal(want)
			}
		}
		if !found {
			t.Errorf("%s not listed identically after restart: %v", want, listed)
		}
	}
}

func TestLocal_CNAMEBesideOtherDataIsAnInvalidChange(t *testing.T) {
	e := newEnv(t)
	p := local.New(e.store, local.Options{})
	z, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: "cn.test", CallerReference: "r"})
	if err != nil {
		t.Fatal(err)
	}
	a := provider.RecordSet{Name: "www.cn.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	c := provider.RecordSet{Name: "www.cn.test", Type: "CNAME", TTL: 60, Targets: []string{"elsewhere.test"}}
	err = p.ApplyChanges(ctx(t), z.ID, []provider.Change{{Action: provider.ActionCreate, After: &a}, {Action: provider.ActionCreate, After: &c}})
	if !errors.Is(err, provider.ErrInvalidChange) {
		t.Fatalf("CNAME beside A: %v, want ErrInvalidChange", err)
	}
	// Replacing the A by the CNAME in one batch is fine.
	if err := p.ApplyChanges(ctx(t), z.ID, []provider.Change{{Action: provider.ActionCreate, After: &a}}); err != nil {
		t.Fatal(err)
	}
	if err := p.ApplyChanges(ctx(t), z.ID, []provider.Change{{Action: provider.ActionDelete, Before: &a}, {Action: provider.ActionCreate, After: &c}}); err != nil {
		t.Fatalf("swap A for CNAME: %v", err)
	}
}

func TestLocal_CancelledContextIsReturned(t *testing.T) {
	e := newEnv(t)
	p := local.New(e.store, local.Options{})
	c, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.EnsureZone(c, provider.ZoneSpec{Name: "ctx.test", CallerReference: "r"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("EnsureZone with a cancelled ctx: %v", err)
	}
	if len(e.store.Zones()) != 0 {
		t.Fatal("zone created with a cancelled ctx")
	}
}

// staleBackend refuses every write as zonedb.ErrStaleVersion, as the zone objects do for a
// writer whose view is behind.
type staleBackend struct{ create bool }

func (b *staleBackend) WriteZone(_ zonedb.ZoneVersion, create bool) error {
	if create && b.create {
		return nil
	}
	return fmt.Errorf("head: %w", zonedb.ErrStaleVersion)
}
func (b *staleBackend) DeleteZone(string) error { return zonedb.ErrStaleVersion }

// TestLocal_NotReadyAndStaleWrites: while Options.Ready fails every call fails with
// ErrNotReady, never with provider.ErrZoneNotFound for a zone still loading; a write the
// backend refuses as stale is provider.ErrConflict (the writer re-reads and re-plans).
func TestLocal_NotReadyAndStaleWrites(t *testing.T) {
	ctx := context.Background()
	loading := errors.New("loading")
	var ready error = loading
	store := zonedb.NewStore(zonedb.StoreOptions{Backend: &staleBackend{create: true}})
	p := local.New(store, local.Options{Ready: func() error { return ready }})
	for name, call := range map[string]func() error{
		"GetZone":   func() error { _, err := p.GetZone(ctx, "a.test"); return err },
		"ListZones": func() error { _, err := p.ListZones(ctx); return err },
		"EnsureZone": func() error {
			_, err := p.EnsureZone(ctx, provider.ZoneSpec{Name: "a.test", CallerReference: "r"})
			return err
		},
		"ListRecordSets": func() error { _, err := p.ListRecordSets(ctx, "a.test"); return err },
		"ApplyChanges":   func() error { return p.ApplyChanges(ctx, "a.test", nil) },
		"DeleteZone":     func() error { return p.DeleteZone(ctx, "a.test") },
	} {
		if err := call(); !errors.Is(err, local.ErrNotReady) || !errors.Is(err, loading) || errors.Is(err, provider.ErrZoneNotFound) {
			t.Errorf("%s while loading: %v, want ErrNotReady", name, err)
		}
	}
	ready = nil
	z, err := p.EnsureZone(ctx, provider.ZoneSpec{Name: "a.test", CallerReference: "r"})
	if err != nil {
		t.Fatal(err)
	}
	err = p.ApplyChanges(ctx, z.ID, []provider.Change{{Action: provider.ActionCreate,
		After: &provider.RecordSet{Name: "www.a.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}}})
	if !errors.Is(err, provider.ErrConflict) || !errors.Is(err, zonedb.ErrStaleVersion) {
		t.Errorf("stale write: %v, want provider.ErrConflict", err)
	}
	if err := p.DeleteZone(ctx, z.ID); !errors.Is(err, provider.ErrConflict) {
		t.Errorf("stale delete: %v, want provider.ErrConflict", err)
	}
	if _, err := p.GetZone(ctx, z.ID); err != nil {
		t.Errorf("the zone is gone after refused writes: %v", err)
	}
}
