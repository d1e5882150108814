package heartbeat_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dnsplane/dnsplane/internal/testing/metrictest"
	"github.com/dnsplane/dnsplane/pkg/heartbeat"
	"github.com/dnsplane/dnsplane/pkg/plan"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/counting"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
	"github.com/dnsplane/dnsplane/pkg/registry"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

const zone = "shared.test"

// hook wraps a provider for fault injection and recording. Zero hooks change nothing.
type hook struct {
	provider.Provider

	mu          sync.Mutex
	failApply   error // returned once by the next ApplyChanges
	applies     [][]provider.Change
	listGate    chan struct{} // when set, ListRecordSets waits for it to be closed
	listEntered chan struct{} // when set, ListRecordSets signals entry (non-blocking)
}

func (h *hook) ApplyChanges(ctx context.Context, zoneID string, changes []provider.Change) error {
	h.mu.Lock()
	err := h.failApply
	h.failApply = nil
	h.applies = append(h.applies, slices.Clone(changes))
	h.mu.Unlock()
	if err != nil {
		return err
	}
	return h.Provider.ApplyChanges(ctx, zoneID, changes)
}

func (h *hook) ListRecordSets(ctx context.Context, zoneID string) ([]provider.RecordSet, error) {
	h.mu.Lock()
	gate, entered := h.listGate, h.listEntered
	h.mu.Unlock()
	if entered != nil {
		select {
		case entered <- struct{}{}:
		default:
		}
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return h.Provider.ListRecordSets(ctx, zoneID)
}

func (h *hook) lastApply() []provider.Change {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.applies) == 0 {
		return nil
	}
	return h.applies[len(h.applies)-1]
}

// backend is one embedded store with a counted provider over it.
type backend struct {
	store   *zonedb.Store
	counted *counting.Provider
	raw     provider.Provider // uncounted, for the tests' own inspections
}

func newBackend(t *testing.T, zones ...string) *backend {
	t.Helper()
	b := &backend{store: zonedb.NewStore(zonedb.StoreOptions{})}
	b.raw = local.New(b.store, local.Options{})
	b.counted = counting.Wrap(b.raw, "local", nil)
	for _, z := range zones {
		if _, err := b.counted.EnsureZone(context.Background(), provider.ZoneSpec{Name: z, CallerReference: "test-" + z}); err != nil {
			t.Fatal(err)
		}
	}
	b.counted.Reset()
	return b
}

// writer returns a new zone writer (one "cluster"'s) over p for zone z.
func newWriter(t *testing.T, p provider.Provider, z string) *zonewriter.Writer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return zonewriter.New(ctx, p, local.ZoneID(z), zonewriter.Options{})
}

func aSet(name string, targets ...string) provider.RecordSet {
	return provider.RecordSet{Name: name, Type: "A", TTL: 60, Targets: targets}
}

func self(owner, name string) registry.Contributor {
	return registry.Contributor{OwnerID: owner, Resource: registry.Resource("DNSRecord", "apps", name)}
}

// target is a writing Target contributing one A target at root.
func target(key string, c registry.Contributor, w *zonewriter.Writer, root, ip string) heartbeat.Target {
	return heartbeat.Target{
		Key: key, Self: c, Zone: zone, RootHost: root, Writer: w,
		Desired: []provider.RecordSet{aSet(root, ip)}, Write: true,
	}
}

// publish plans every target in order, as their reconciles would, against the zone as the
// previous ones leave it, and writes everything in one ApplyChanges.
func publish(t *testing.T, p provider.Provider, z string, targets ...heartbeat.Target) {
	t.Helper()
	ctx := context.Background()
	sets, err := p.ListRecordSets(ctx, local.ZoneID(z))
	if err != nil {
		t.Fatal(err)
	}
	view := map[provider.RecordSetKey]provider.RecordSet{}
	for _, rs := range sets {
		view[rs.Key()] = rs
	}
	var all []provider.Change
	for _, tg := range targets {
		res := plan.Compute(plan.Input{Zone: z, Self: tg.Self, Mode: plan.Shared, Desired: tg.Desired, Current: slices.Collect(maps.Values(view))})
		if len(res.Conflicts) > 0 {
			t.Fatalf("plan of %s: conflicts %v", tg.Key, res.Conflicts)
		}
		if err := zonewriter.ApplyTo(view, res.Changes); err != nil {
			t.Fatal(err)
		}
		all = append(all, res.Changes...)
	}
	if err := p.ApplyChanges(ctx, local.ZoneID(z), all); err != nil {
		t.Fatal(err)
	}
}

func list(t *testing.T, p provider.Provider, z string) []provider.RecordSet {
	t.Helper()
	sets, err := p.ListRecordSets(context.Background(), local.ZoneID(z))
	if err != nil {
		t.Fatal(err)
	}
	return sets
}

// targetsAt returns the sorted targets of name/A.
func targetsAt(t *testing.T, p provider.Provider, z, name string) []string {
	t.Helper()
	for _, rs := range list(t, p, z) {
		if rs.Name == name && rs.Type == "A" {
			return slices.Sorted(slices.Values(rs.Targets))
		}
	}
	return nil
}

// heartbeatOf returns c's heartbeat at root (its newest over its registry records there), and
// whether it has a registry record there at all.
func heartbeatOf(t *testing.T, p provider.Provider, z string, c registry.Contributor, root string) (time.Time, bool) {
	t.Helper()
	ix := registry.NewIndex(z, list(t, p, z))
	var last time.Time
	found := false
	for _, e := range ix.Of(c) {
		if e.Name == root {
			found = true
			if e.Heartbeat.After(last) {
				last = e.Heartbeat
			}
		}
	}
	return last, found
}

// checks collects OnCheck calls.
type checks struct {
	mu   sync.Mutex
	last map[string][]heartbeat.Owner
	n    map[string]int
	ch   chan string // receives each key checked, when not nil (buffered by the test)
}

func newChecks(buffer int) *checks {
	c := &checks{last: map[string][]heartbeat.Owner{}, n: map[string]int{}}
	if buffer > 0 {
		c.ch = make(chan string, buffer)
	}
	return c
}

func (c *checks) onCheck(key string, owners []heartbeat.Owner) {
	c.mu.Lock()
	c.last[key] = owners
	c.n[key]++
	c.mu.Unlock()
	if c.ch != nil {
		c.ch <- key
	}
}

func (c *checks) get(key string) ([]heartbeat.Owner, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last[key], c.n[key]
}

// wait waits for an OnCheck of each of keys (in any order), dropping the checks of other keys;
// the timeout only guards against a hang.
func (c *checks) wait(t *testing.T, keys ...string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	missing := map[string]bool{}
	for _, k := range keys {
		missing[k] = true
	}
	for len(missing) > 0 {
		select {
		case k := <-c.ch:
			delete(missing, k)
		case <-deadline:
			t.Fatalf("no check of %v", slices.Sorted(maps.Keys(missing)))
		}
	}
}

func owner(owners []heartbeat.Owner, id string) (heartbeat.Owner, bool) {
	for _, o := range owners {
		if o.OwnerID == id {
			return o, true
		}
	}
	return heartbeat.Owner{}, false
}

// gauges returns the age gauge's values, by "root_host owner".
func gauges(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "dnsplane_dnsrecord_owner_heartbeat_age_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out[labels["root_host"]+" "+labels["owner"]] = m.GetGauge().GetValue()
		}
	}
	return out
}

// ticks returns the tick counter's value for result.
func ticks(t *testing.T, reg *prometheus.Registry, result string) float64 {
	t.Helper()
	return metrictest.Value(t, reg, "dnsplane_heartbeat_zone_ticks_total", map[string]string{"result": result})
}

func newMetrics(t *testing.T) (*heartbeat.Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := heartbeat.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	return m, reg
}

func ip(i int) string { return fmt.Sprintf("10.0.%d.%d", i/250, i%250+1) }
