package providertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/guard"
)

// Requests is what a cloud fake reports of the write requests it received.
type Requests struct {
	// Sent is how many write requests the fake received so far, rejected ones included.
	Sent func() int
	// Accepted returns the size (as the fake counts it: records or sets) of every write request
	// it accepted, in order.
	Accepted func() []int
	// Rejected, when set, is the error an over-limit request maps to (errors.Is); nil = any.
	Rejected error
}

// DeleteZoneIsSplitByTheGuard checks "one splitter" for DeleteZone on a provider.ZoneDrainer
// whose requests hold at most 1,000 records (Route 53, Cloud DNS): with 1,001 single-record sets
// in zone zoneID, the provider's own DeleteZone sends one request and never splits (rejected,
// nothing deleted), and the guard deletes the sets in requests of 1,000 and 1, then the zone.
func DeleteZoneIsSplitByTheGuard(t *testing.T, p provider.Provider, zoneID string, r Requests) {
	t.Helper()
	ctx := context.Background()
	g := guard.New(p, guard.Options{})
	var changes []provider.Change
	for i := range 1001 {
		rs := provider.RecordSet{Name: fmt.Sprintf("d%04d.example.test", i), Type: "A", TTL: 60, Targets: []string{fmt.Sprintf("10.5.%d.%d", i/256, i%256)}}
		changes = append(changes, provider.Change{Action: provider.ActionCreate, After: &rs})
	}
	if err := g.ApplyChanges(ctx, zoneID, changes); err != nil {
		t.Fatal(err)
	}
	sent := r.Sent()
	err := p.DeleteZone(ctx, zoneID)
	if err == nil || (r.Rejected != nil && !errors.Is(err, r.Rejected)) {
		t.Fatalf("unguarded DeleteZone of 1,001 sets: %v, want the backend's rejection of one unsplit request (%v)", err, r.Rejected)
	}
	if n := r.Sent() - sent; n != 1 {
		t.Errorf("unguarded DeleteZone sent %d write requests, want 1", n)
	}
	if sets, err := p.ListRecordSets(ctx, zoneID); err != nil || len(sets) != 1001+2 {
		t.Fatalf("after the rejected DeleteZone: %d sets, %v; want all 1,003", len(sets), err)
	}
	accepted := len(r.Accepted())
	if err := g.DeleteZone(ctx, zoneID); err != nil {
		t.Fatalf("guarded DeleteZone: %v", err)
	}
	if got := r.Accepted()[accepted:]; !slices.Equal(got, []int{1000, 1}) {
		t.Errorf("guarded DeleteZone: write requests of %v, want [1000 1]", got)
	}
	if _, err := p.GetZone(ctx, zoneID); !errors.Is(err, provider.ErrZoneNotFound) {
		t.Errorf("GetZone after DeleteZone: %v, want ErrZoneNotFound", err)
	}
}
