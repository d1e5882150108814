package plan_test

import (
	"fmt"

	"github.com/dnsplane/dnsplane/pkg/plan"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

// A DNSEndpoint wants www A in a zone that holds only its apex: the plan creates the set and,
// beside it, the registry record that names its owner. Planned again against the zone as the
// changes left it, the plan is empty: Compute converges.
func ExampleCompute() {
	in := plan.Input{
		Zone: "example.test",
		Self: registry.Contributor{OwnerID: "c1", Resource: "DNSEndpoint/team-a/www"},
		Mode: plan.SingleOwner,
		Desired: []provider.RecordSet{
			{Name: "www.example.test", Type: "A", TTL: 300, Targets: []string{"192.0.2.1", "192.0.2.2"}},
		},
		Current: []provider.RecordSet{
			{Name: "example.test", Type: "NS", TTL: 3600, Targets: []string{"ns1.example.test"}},
		},
		DefaultTTL: 300,
	}
	res := plan.Compute(in)
	for _, ch := range res.Changes {
		fmt.Println(ch.Action, ch.After)
		in.Current = append(in.Current, *ch.After)
	}
	fmt.Println("conflicts:", len(res.Conflicts))
	fmt.Println("changes once applied:", len(plan.Compute(in).Changes))
	// Output:
	// Create dp-a-ubyficdjd4-www.example.test/TXT ttl=300 "heritage=dnsplane&v=1&owner=c1&resource=DNSEndpoint/team-a/www&name=www.example.test&type=A&ttl=300&target=192.0.2.1&target=192.0.2.2"
	// Create www.example.test/A ttl=300 "192.0.2.1,192.0.2.2"
	// conflicts: 0
	// changes once applied: 0
}
