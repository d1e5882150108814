package registry_test

import (
	"fmt"
	"testing"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

// registryZone returns a zone of n managed A sets, each with its registry TXT record (an
// owner, a DNSEndpoint of 10 endpoints, one target), as a zone writer's view holds them.
func registryZone(n int) []provider.RecordSet {
	const zone = "example.test"
	sets := make([]provider.RecordSet, 0, 2*n)
	for i := range n {
		name := fmt.Sprintf("h%d.%s", i, zone)
		ip := fmt.Sprintf("10.%d.%d.1", i/256%256, i%256)
		e := registry.Entry{OwnerID: "c1", Resource: registry.Resource("DNSEndpoint", "ns", fmt.Sprintf("o%d", i/10)),
			Name: name, Type: "A", TTL: 300, Targets: []string{ip}}
		sets = append(sets, provider.RecordSet{Name: name, Type: "A", TTL: 300, Targets: []string{ip}}, registry.RecordSet(zone, e))
	}
	return sets
}

// BenchmarkParse is the decoding of one registry TXT value (registry.Parse).
func BenchmarkParse(b *testing.B) {
	rs := registryZone(1)[1]
	if len(rs.Targets) != 1 {
		b.Fatalf("registry record %v has %d values, want 1", rs, len(rs.Targets))
	}
	value := rs.Targets[0]
	if _, err := registry.Parse(value); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := registry.Parse(value); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNewIndex is the parsing of a whole zone's registry into an Index (registry.NewIndex),
// what a planner pays once per zone view, at 1,000 and 10,000 managed sets (2,000 and 20,000
// record sets with their registry records).
func BenchmarkNewIndex(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		sets := registryZone(n)
		b.Run(fmt.Sprintf("sets=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if ix := registry.NewIndex("example.test", sets); ix == nil {
					b.Fatal("nil index")
				}
			}
		})
	}
}
