package aws_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/dnsplane/dnsplane/internal/testing/route53fake"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/aws"
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

// shrinkingUpdates creates n A sets of 4 targets through p and returns updates that shrink each
// to 1 target: Route 53 counts such an update as 4+1 ResourceRecord elements (the DELETE of the
// old set plus the CREATE of the new one), not as twice the new set.
func shrinkingUpdates(t *testing.T, p provider.Provider, zoneID string, n int) (updates, final []provider.Change) {
	t.Helper()
	var creates []provider.Change
	for i := range n {
		old := provider.RecordSet{Name: fmt.Sprintf("s%04d.example.test", i), Type: "A", TTL: 60}
		for j := range 4 {
			old.Targets = append(old.Targets, fmt.Sprintf("10.%d.%d.%d", j, i/256, i%256))
		}
		nw := old.Clone()
		nw.Targets = nw.Targets[:1]
		creates = append(creates, provider.Change{Action: provider.ActionCreate, After: &old})
		updates = append(updates, provider.Change{Action: provider.ActionUpdate, Before: &old, After: &nw})
		final = append(final, provider.Change{Action: provider.ActionCreate, After: &nw})
	}
	if err := p.ApplyChanges(context.Background(), zoneID, creates); err != nil {
		t.Fatalf("creates: %v", err)
	}
	return updates, final
}

// limitedGuard returns a Route 53 provider guarded with a token bucket that does not refill
// during a test (what it loses is what the guard took), and one zone.
func limitedGuard(t *testing.T, fake *route53fake.Server) (*guard.Provider, *rate.Limiter, provider.Zone) {
	t.Helper()
	lim := guard.NewLimiter(1e-9, 100)
	p := guard.New(newProvider(t, fake, func(c *aws.Config) { c.MaxAttempts = 1 }), guard.Options{Limiter: lim})
	z, err := p.EnsureZone(context.Background(), provider.ZoneSpec{Name: "example.test", CallerReference: "ref-exact"})
	if err != nil {
		t.Fatal(err)
	}
	return p, lim, z
}

// applyOneRequestPerBatch applies changes through p and asserts that each guarded batch
// (guard.Provider.Batches: provider.SplitBatches under p's Capabilities and RequestCost) left as exactly one ChangeResourceRecordSets
// request and cost exactly one token of lim.
func applyOneRequestPerBatch(t *testing.T, fake *route53fake.Server, p *guard.Provider, lim *rate.Limiter, zoneID string, changes []provider.Change) {
	t.Helper()
	batches := p.Batches(changes)
	requests, reads, tokens := fake.Count("ChangeResourceRecordSets"), fake.Count("ListTagsForResource"), lim.Tokens()
	if err := p.ApplyChanges(context.Background(), zoneID, changes); err != nil {
		t.Fatal(err)
	}
	sent := fake.Count("ChangeResourceRecordSets") - requests
	// Before a multi-batch apply the guard may read the zone's name: one GetZone, one token, the
	// only ListTagsForResource here (the provider's own name lookup is a bare GetHostedZone).
	taken := int(math.Round(tokens-lim.Tokens())) - (fake.Count("ListTagsForResource") - reads)
	t.Logf("%d changes: %d guarded batches, %d requests, %d tokens", len(changes), len(batches), sent, taken)
	if sent != len(batches) || taken != len(batches) {
		t.Errorf("%d guarded batches left as %d ChangeResourceRecordSets requests for %d tokens, want one request and one token each",
			len(batches), sent, taken)
	}
}

// TestShrinkingUpdatesOneRequestAndOneTokenPerGuardedBatch: the guard counts
// an Update as Route 53 does for the DELETE+CREATE the provider sends, so one guarded batch leaves
// as exactly one ChangeResourceRecordSets request and costs exactly one rate-limit token.
func TestShrinkingUpdatesOneRequestAndOneTokenPerGuardedBatch(t *testing.T) {
	fake := route53fake.New()
	t.Cleanup(fake.Close)
	p, lim, z := limitedGuard(t, fake)
	updates, final := shrinkingUpdates(t, p, z.ID, 300)
	applyOneRequestPerBatch(t, fake, p, lim, z.ID, updates)
	checkZone(t, p, z.ID, final)
}

// TestValueCharactersCountedAsSentOneRequestPerGuardedBatch: value characters
// are counted as Route 53 receives them, a name target with its trailing dot and a TXT byte
// outside printable ASCII as its 4-character \ooo escape, so one guarded batch is one request.
func TestValueCharactersCountedAsSentOneRequestPerGuardedBatch(t *testing.T) {
	for _, tc := range []struct {
		name, rtype string
		target      func(i int) string
	}{
		// 800 CNAME targets of 40 characters: 32,000 without the dots, 32,800 as sent.
		{"cname", "CNAME", func(i int) string { return fmt.Sprintf("%03d%s.example.test", i, strings.Repeat("c", 24)) }},
		// 800 TXT values of 37 bytes and a tab: 40 characters quoted, 43 as sent.
		{"txt", "TXT", func(i int) string { return fmt.Sprintf("%03d%s\t", i, strings.Repeat("t", 34)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := route53fake.New()
			t.Cleanup(fake.Close)
			p, lim, z := limitedGuard(t, fake)
			var creates []provider.Change
			for i := range 800 {
				rs := provider.RecordSet{Name: fmt.Sprintf("v%04d.example.test", i), Type: tc.rtype, TTL: 60, Targets: []string{tc.target(i)}}
				creates = append(creates, provider.Change{Action: provider.ActionCreate, After: &rs})
			}
			applyOneRequestPerBatch(t, fake, p, lim, z.ID, creates)
			checkZone(t, p, z.ID, creates)
		})
	}
}

// TestShrinkingUpdatesThrottledBatchNotResent: when the second request of a
// guarded apply is throttled, the guard retries that batch alone; a batch already applied is never
// sent again (resending its exact DELETE would fail: the old set is gone).
func TestShrinkingUpdatesThrottledBatchNotResent(t *testing.T) {
	fake := route53fake.New()
	t.Cleanup(fake.Close)
	p, z := guarded(t, fake, 1)
	ctx := context.Background()
	updates, final := shrinkingUpdates(t, p, z.ID, 300)
	accepted := len(fake.BatchSizes())
	// Warm the guard's zone-name memory so that every request below is a ChangeResourceRecordSets.
	if _, err := p.GetZone(ctx, z.ID); err != nil {
		t.Fatal(err)
	}
	fake.ThrottleEvery(2) // the 2nd, 4th, ... request from now on is throttled
	if err := p.ApplyChanges(ctx, z.ID, updates); err != nil {
		t.Fatalf("updates with the 2nd request throttled: %v", err)
	}
	fake.ThrottleEvery(0)
	elems := 0
	for _, n := range fake.BatchSizes()[accepted:] {
		elems += n
	}
	if want := 300 * (4 + 1); elems != want {
		t.Errorf("%d ResourceRecord elements accepted for the updates, want %d (each change sent once)", elems, want)
	}
	checkZone(t, p, z.ID, final)
}

// singleCreates returns n creates of one-target A sets.
func singleCreates(n int) []provider.Change {
	var out []provider.Change
	for i := range n {
		rs := provider.RecordSet{Name: fmt.Sprintf("o%04d.example.test", i), Type: "A", TTL: 60, Targets: []string{fmt.Sprintf("10.4.%d.%d", i/256, i%256)}}
		out = append(out, provider.Change{Action: provider.ActionCreate, After: &rs})
	}
	return out
}

// TestApplyChangesIsOneRequestTheGuardSplits: the provider's ApplyChanges
// sends one ChangeResourceRecordSets request and never splits (1,001 elements are rejected by
// Route 53, nothing is written); the guard is the only splitter and sends them as 1,000 + 1.
func TestApplyChangesIsOneRequestTheGuardSplits(t *testing.T) {
	fake, p, z := setup(t, func(c *aws.Config) { c.MaxAttempts = 1 })
	ctx := context.Background()
	changes := singleCreates(1001)
	before := fake.Count("ChangeResourceRecordSets")
	if err := p.ApplyChanges(ctx, z.ID, changes); !errors.Is(err, provider.ErrInvalidChange) {
		t.Fatalf("1,001 elements in one ApplyChanges: %v, want Route 53's ErrInvalidChange", err)
	}
	if n := fake.Count("ChangeResourceRecordSets") - before; n != 1 {
		t.Errorf("one ApplyChanges sent %d ChangeResourceRecordSets requests, want 1", n)
	}
	checkZone(t, p, z.ID, nil)
	if err := guard.New(p, guard.Options{}).ApplyChanges(ctx, z.ID, changes); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(fake.BatchSizes()); got != "[1000 1]" {
		t.Errorf("guarded: requests of %s elements, want [1000 1]", got)
	}
	checkZone(t, p, z.ID, changes)
}

// TestAliasesCostNoValueCharactersOneRequestPerGuardedBatch: Route 53 sends an
// alias as an AliasTarget with no Value element, and says so through provider.RequestSizer, so
// 1,000 aliases whose DNS names total 41,000 characters (over the 32,000 of a request, were they
// values) are one guarded batch, one request and one token.
func TestAliasesCostNoValueCharactersOneRequestPerGuardedBatch(t *testing.T) {
	fake := route53fake.New()
	t.Cleanup(fake.Close)
	p, lim, z := limitedGuard(t, fake)
	var aliases []provider.Change
	for i := range 1000 {
		rs := provider.RecordSet{Name: fmt.Sprintf("l%04d.example.test", i), Type: "A", Targets: []string{fmt.Sprintf("%04d-%s.elb.amazonaws.com", i, strings.Repeat("e", 18))},
			ProviderSpecific: map[string]string{aws.KeyAlias: "true", aws.KeyTargetHostedZone: "Z35SXDOTRQ7X7K"}}
		aliases = append(aliases, provider.Change{Action: provider.ActionCreate, After: &rs})
	}
	if e, b := provider.ChangeCost(aliases[0]); e != 1 || b != 41 {
		t.Fatalf("ChangeCost of an alias = %d elements, %d characters; the test needs 1 and 41", e, b)
	}
	if e, b := provider.RequestCost(unwrap(t, p), aliases[0]); e != 1 || b != 0 {
		t.Errorf("Route 53's RequestCost of an alias = %d elements, %d characters; want 1 and 0", e, b)
	}
	if n := len(provider.SplitBatches(aliases, p.Capabilities(), nil)); n != 2 {
		t.Fatalf("by ChangeCost the aliases are %d batches; the test needs 2", n)
	}
	applyOneRequestPerBatch(t, fake, p, lim, z.ID, aliases)
	if n := len(p.Batches(aliases)); n != 1 {
		t.Errorf("the guard sends 1,000 aliases as %d requests, want 1", n)
	}
	checkZone(t, p, z.ID, aliases)
}

// unwrap returns the Route 53 provider under g.
func unwrap(t *testing.T, g *guard.Provider) provider.Provider {
	t.Helper()
	p, ok := g.Unwrap().(*aws.Provider)
	if !ok {
		t.Fatalf("guard wraps %T", g.Unwrap())
	}
	return p
}
