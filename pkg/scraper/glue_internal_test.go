package scraper

import (
	"slices"
	"testing"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

// TestDelegations: only address sets at or below a subdomain cut are glue; addresses of the
// parent's own names, and NS sets at the apex, are not.
func TestDelegations(t *testing.T) {
	sets := []provider.RecordSet{
		{Name: "example.test", Type: "NS", Targets: []string{"ns1.example.test"}},
		{Name: "ns1.example.test", Type: "A", Targets: []string{"192.0.2.1"}},
		{Name: "c1.example.test", Type: "NS", Targets: []string{"ns2.c1.example.test", "ns1.c1.example.test"}},
		{Name: "ns1.c1.example.test", Type: "A", Targets: []string{"192.0.2.11", "192.0.2.10"}},
		{Name: "ns1.c1.example.test", Type: "AAAA", Targets: []string{"2001:db8::10"}},
		{Name: "deep.ns.c1.example.test", Type: "A", Targets: []string{"192.0.2.12"}},
		{Name: "c1x.example.test", Type: "A", Targets: []string{"192.0.2.13"}},
		{Name: "c1.example.test", Type: "TXT", Targets: []string{"not glue"}},
	}
	ns, glue := delegations(sets, "example.test")
	if len(ns) != 1 || !slices.Equal(ns["c1.example.test"], []string{"ns1.c1.example.test", "ns2.c1.example.test"}) {
		t.Errorf("NS sets %v", ns)
	}
	want := map[provider.RecordSetKey][]string{
		{Name: "ns1.c1.example.test", Type: "A"}:     {"192.0.2.10", "192.0.2.11"},
		{Name: "ns1.c1.example.test", Type: "AAAA"}:  {"2001:db8::10"},
		{Name: "deep.ns.c1.example.test", Type: "A"}: {"192.0.2.12"},
	}
	if len(glue) != len(want) {
		t.Errorf("glue %v, want %v", glue, want)
	}
	for k, v := range want {
		if !slices.Equal(glue[k], v) {
			t.Errorf("glue %s = %v, want %v", k, glue[k], v)
		}
	}
}
