package aws_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/aws"
	"github.com/dnsplane/dnsplane/pkg/provider/aws/route53fake"
	"github.com/dnsplane/dnsplane/pkg/provider/guard"
)

// fiveThousand returns 5,000 ResourceRecord elements of creates: 3,000 single-target A sets, 500
// A sets of 2 targets and 1,000 TXT sets of 200 characters (the value limit binds there).
func fiveThousand() []provider.Change {
	var out []provider.Change
	add := func(rs provider.RecordSet) {
		out = append(out, provider.Change{Action: provider.ActionCreate, After: &rs})
	}
	for i := range 3000 {
		add(provider.RecordSet{Name: fmt.Sprintf("a%04d.example.test", i), Type: "A", TTL: 60, Targets: []string{fmt.Sprintf("10.1.%d.%d", i/256, i%256)}})
	}
	for i := range 500 {
		add(provider.RecordSet{Name: fmt.Sprintf("m%04d.example.test", i), Type: "A", TTL: 60, Targets: []string{fmt.Sprintf("10.2.%d.%d", i/256, i%256), fmt.Sprintf("10.3.%d.%d", i/256, i%256)}})
	}
	for i := range 1000 {
		add(provider.RecordSet{Name: fmt.Sprintf("t%04d.example.test", i), Type: "TXT", TTL: 60, Targets: []string{fmt.Sprintf("%04d-%0196d", i, 0)}})
	}
	return out
}

// guarded returns a Route 53 provider as the factory builds it: the SDK retries each HTTP request
// (list pages included) up to attempts times, and pkg/provider/guard retries a whole batch once
// the SDK gives up; back-off is in milliseconds so that the test does not wait real seconds.
func guarded(t *testing.T, fake *route53fake.Server, attempts int) (*guard.Provider, provider.Zone) {
	t.Helper()
	p := guard.New(newProvider(t, fake, func(c *aws.Config) { c.MaxAttempts = attempts }),
		guard.Options{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, MaxRetries: 20})
	z, err := p.EnsureZone(context.Background(), provider.ZoneSpec{Name: "example.test", CallerReference: "ref-limits"})
	if err != nil {
		t.Fatal(err)
	}
	return p, z
}

// checkZone asserts the zone holds exactly want (plus the apex SOA and NS).
func checkZone(t *testing.T, p provider.Provider, zoneID string, want []provider.Change) {
	t.Helper()
	sets, err := p.ListRecordSets(context.Background(), zoneID)
	if err != nil {
		t.Fatal(err)
	}
	got := map[provider.RecordSetKey]provider.RecordSet{}
	for _, s := range sets {
		if _, dup := got[s.Key()]; dup {
			t.Fatalf("duplicate record set %s", s.Key())
		}
		if s.Type != "SOA" && s.Type != "NS" {
			got[s.Key()] = s
		}
	}
	if len(got) != len(want) {
		t.Fatalf("zone holds %d record sets, want %d", len(got), len(want))
	}
	for _, c := range want {
		if g, ok := got[c.After.Key()]; !ok || !g.Equal(*c.After) {
			t.Fatalf("record set %s = %v, want %v", c.After.Key(), g, *c.After)
		}
	}
}

// TestFiveThousandRecordsSplitWithinBothLimits: one 5,000-element apply through the guard is
// split into requests of at most 1,000 ResourceRecord elements and 32,000 value characters
// (Route 53 API Reference, ChangeResourceRecordSets; the fake rejects a request over either).
func TestFiveThousandRecordsSplitWithinBothLimits(t *testing.T) {
	fake := route53fake.New()
	t.Cleanup(fake.Close)
	p, z := guarded(t, fake, 3)
	changes := fiveThousand()
	if err := p.ApplyChanges(context.Background(), z.ID, changes); err != nil {
		t.Fatal(err)
	}
	sizes := fake.BatchSizes()
	total := 0
	for _, n := range sizes {
		if n > route53fake.MaxRecordElements {
			t.Fatalf("a request of %d elements", n)
		}
		total += n
	}
	if total != 5000 {
		t.Fatalf("%d elements sent in %v, want 5,000", total, sizes)
	}
	// 3,500 A sets (4,000 elements) fill 4 requests; 1,000 TXT sets of 202 quoted characters
	// fit 158 per 32,000 characters: 7 more (the first shares the last A request).
	t.Logf("5,000 elements in %d ChangeResourceRecordSets requests: %v", len(sizes), sizes)
	if len(sizes) > 12 {
		t.Errorf("%d requests, want at most 12", len(sizes))
	}
	checkZone(t, p, z.ID, changes)
}

// TestThrottleStormConverges: with every 3rd request answered 400 Throttling, 5,000 creates,
// then 5,000 updates, still converge, and the zone holds each record set exactly once with its
// final value: a throttled batch is retried alone, and no batch is sent twice after success.
func TestThrottleStormConverges(t *testing.T) {
	fake := route53fake.New()
	t.Cleanup(fake.Close)
	// SDK attempts 1: every throttled batch is retried by the guard alone. The listing at the end
	// runs after the storm, since a paged read cannot complete when every 3rd page fails and
	// nothing retries pages (the factory keeps the SDK's per-request retries for that).
	p, z := guarded(t, fake, 1)
	fake.ThrottleEvery(3)
	ctx := context.Background()
	changes := fiveThousand()
	if err := p.ApplyChanges(ctx, z.ID, changes); err != nil {
		t.Fatalf("creates under the storm: %v", err)
	}
	var updates, final []provider.Change
	for _, c := range changes {
		after := c.After.Clone()
		after.TTL = 300
		updates = append(updates, provider.Change{Action: provider.ActionUpdate, Before: c.After, After: &after})
		final = append(final, provider.Change{Action: provider.ActionCreate, After: &after})
	}
	if err := p.ApplyChanges(ctx, z.ID, updates); err != nil {
		t.Fatalf("updates under the storm: %v", err)
	}
	throttled := fake.Count("Throttled")
	fake.ThrottleEvery(0)
	checkZone(t, p, z.ID, final)
	if throttled == 0 {
		t.Fatal("the storm throttled nothing")
	}
	accepted := len(fake.BatchSizes())
	t.Logf("storm: %d requests throttled, %d change batches accepted", throttled, accepted)
	if !slices.ContainsFunc(fake.BatchSizes(), func(n int) bool { return n > 0 }) {
		t.Fatal("no batch accepted")
	}
}
