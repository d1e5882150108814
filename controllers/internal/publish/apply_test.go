package publish

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/plan"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

// barrier is a provider whose ApplyChanges answers only once every one of want zones has a
// write in flight (or fails after wait): writes reach it at the same time, or not at all. fail
// names zones whose write is rejected once they all arrived. Only the two methods a zone writer
// calls are implemented.
type barrier struct {
	provider.Provider
	want int
	wait time.Duration
	fail map[string]bool

	mu      sync.Mutex
	arrived map[string][]provider.Change
	all     chan struct{} // closed when want zones arrived
}

func newBarrier(want int, fail ...string) *barrier {
	b := &barrier{want: want, wait: testrun.HangTimeout, fail: map[string]bool{}, arrived: map[string][]provider.Change{}, all: make(chan struct{})}
	for _, z := range fail {
		b.fail[z] = true
	}
	return b
}

func (b *barrier) ListRecordSets(context.Context, string) ([]provider.RecordSet, error) {
	return nil, nil
}

func (b *barrier) ApplyChanges(ctx context.Context, zoneID string, changes []provider.Change) error {
	b.mu.Lock()
	b.arrived[zoneID] = changes
	if len(b.arrived) == b.want {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
	case <-time.After(b.wait):
		return fmt.Errorf("zone %s: the other zones' writes never arrived while this one was in flight", zoneID)
	case <-ctx.Done():
		return ctx.Err()
	}
	if b.fail[zoneID] {
		return fmt.Errorf("zone %s: %w", zoneID, errors.New("rejected"))
	}
	return nil
}

// zonePlans returns one plan per zone name, each writing one record set and its registry
// record through its own zone writer over p.
func zonePlans(ctx context.Context, t *testing.T, p provider.Provider, zones ...string) []ZonePlan {
	t.Helper()
	var out []ZonePlan
	for i, z := range zones {
		rs := provider.RecordSet{Name: "app." + z, Type: "A", TTL: 60, Targets: []string{fmt.Sprintf("192.0.2.%d", i+1)}}
		reg := provider.RecordSet{Name: "a-app." + z, Type: "TXT", TTL: 60, Targets: []string{"claim " + z}}
		record := provider.Change{Action: provider.ActionCreate, After: &rs}
		w := zonewriter.New(ctx, p, z, zonewriter.Options{})
		out = append(out, ZonePlan{Zone: &dnsv1.DNSZone{Spec: dnsv1.DNSZoneSpec{Zone: z}}, Writer: w,
			Result: plan.Result{Changes: []provider.Change{{Action: provider.ActionCreate, After: &reg}, record}, Records: []provider.Change{record}}})
	}
	return out
}

// TestApplyPlans_WritesEveryZoneAtOnce: an object's zones are submitted to their writers
// concurrently, so each zone's write is in flight while the others are (the provider answers
// only when all of them arrived); each zone's registry record and record set arrive together,
// in the planner's order, as one call.
func TestApplyPlans_WritesEveryZoneAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	zones := []string{"z0.test", "z1.test", "z2.test", "z3.test", "z4.test", "z5.test", "z6.test", "z7.test", "z8.test", "z9.test"}
	b := newBarrier(len(zones))
	plans := zonePlans(ctx, t, b, zones...)
	errs := applyPlans(ctx, plans, nil)
	if i := firstFailed(errs); i >= 0 {
		t.Fatalf("zone %s: %v", zones[i], errs[i])
	}
	for i, z := range zones {
		got := b.arrived[z]
		if len(got) != 2 || got[0].After.Type != "TXT" || got[1] != plans[i].Result.Changes[1] {
			t.Errorf("zone %s received %v, want its registry record then its record set in one call", z, got)
		}
	}
}

// TestApplyPlans_AFailedZoneLeavesTheOthersWritten: a zone whose write fails neither stops nor
// undoes the others; what remains for status.plan is the failed zone's records only, and the
// error reported is the first failed zone's in zone order.
func TestApplyPlans_AFailedZoneLeavesTheOthersWritten(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	zones := []string{"a.test", "b.test", "c.test", "d.test"}
	b := newBarrier(len(zones), "b.test", "d.test")
	plans := zonePlans(ctx, t, b, zones...)
	errs := applyPlans(ctx, plans, nil)
	if i := firstFailed(errs); i != 1 {
		t.Fatalf("first failed zone = %d (%v), want 1 (b.test)", i, errs)
	}
	if errs[0] != nil || errs[2] != nil || errs[3] == nil {
		t.Fatalf("errs = %v, want only b.test and d.test failed", errs)
	}
	rest := remaining(plans, errs)
	if len(rest) != 2 || rest[0].After.Name != "app.b.test" || rest[1].After.Name != "app.d.test" {
		t.Fatalf("remaining = %v, want the records of b.test and d.test", rest)
	}
}

// readBarrier is a provider whose ListRecordSets answers only once every one of want zones is
// being read (or fails after 20 s).
type readBarrier struct {
	provider.Provider
	want int

	mu      sync.Mutex
	reading map[string]bool
	all     chan struct{}
}

func (b *readBarrier) ListRecordSets(ctx context.Context, zoneID string) ([]provider.RecordSet, error) {
	b.mu.Lock()
	b.reading[zoneID] = true
	if len(b.reading) == b.want {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
		return []provider.RecordSet{{Name: zoneID, Type: "NS", TTL: 60, Targets: []string{"ns1." + zoneID}}}, nil
	case <-time.After(testrun.HangTimeout):
		return nil, fmt.Errorf("zone %s: the other zones were not read while this one was", zoneID)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestLoadSnapshots_ReadsEveryZoneAtOnce: planning an object over cold zone writers reads all
// its zones at the same time (the provider answers only when every read arrived), not one
// after another.
func TestLoadSnapshots_ReadsEveryZoneAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	zones := []string{"z0.test", "z1.test", "z2.test", "z3.test", "z4.test", "z5.test", "z6.test", "z7.test", "z8.test", "z9.test"}
	b := &readBarrier{want: len(zones), reading: map[string]bool{}, all: make(chan struct{})}
	var tasks []zoneTask
	for _, z := range zones {
		tasks = append(tasks, zoneTask{zone: &dnsv1.DNSZone{Spec: dnsv1.DNSZoneSpec{Zone: z}}, w: zonewriter.New(ctx, b, z, zonewriter.Options{})})
	}
	loadSnapshots(ctx, tasks)
	for _, zt := range tasks {
		if zt.err != nil || zt.snap == nil {
			t.Fatalf("zone %s: snapshot %v, error %v", zt.zone.Spec.Zone, zt.snap, zt.err)
		}
	}
}
