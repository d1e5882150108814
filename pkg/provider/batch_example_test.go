package provider_test

import (
	"fmt"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

// Three creates against a backend that takes at most four ResourceRecord elements a request:
// the first two sets (two addresses, then one) fit one request; the third (two more) would make
// five and starts the next. Order is kept and no change is split.
func ExampleSplitBatches() {
	create := func(name string, targets ...string) provider.Change {
		return provider.Change{Action: provider.ActionCreate,
			After: &provider.RecordSet{Name: name, Type: "A", TTL: 300, Targets: targets}}
	}
	changes := []provider.Change{
		create("a.example.test", "192.0.2.1", "192.0.2.2"),
		create("b.example.test", "192.0.2.3"),
		create("c.example.test", "192.0.2.4", "192.0.2.5"),
	}
	caps := provider.Capabilities{BatchWrites: true, MaxChangesPerBatch: 4}
	for i, batch := range provider.SplitBatches(changes, caps, nil) {
		fmt.Print("request ", i+1, ":")
		for _, ch := range batch {
			fmt.Print(" ", ch.After.Name)
		}
		fmt.Println()
	}
	fmt.Println("without BatchWrites:", len(provider.SplitBatches(changes, provider.Capabilities{}, nil)), "requests")
	// Output:
	// request 1: a.example.test b.example.test
	// request 2: c.example.test
	// without BatchWrites: 3 requests
}
