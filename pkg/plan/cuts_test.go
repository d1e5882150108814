package plan

import (
	"strings"
	"testing"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

// TestCompute_GuestDelegationMayNotHideOthersNames pins the guest rule (Input.Guest, docs/api.md
// "Tenancy"): a delegation into another namespace's zone over names held outside the guest's
// namespace is an OwnershipConflict naming them, and nothing of it is written.
func TestCompute_GuestDelegationMayNotHideOthersNames(t *testing.T) {
	guest := registry.Contributor{OwnerID: "c1", Resource: "DNSEndpoint/tenant-b/deleg"}
	guest2 := registry.Contributor{OwnerID: "c2", Resource: "DNSRecord/tenant-b/edge"} // same namespace, another cluster
	owner := registry.Contributor{OwnerID: "c1", Resource: "DNSEndpoint/tenant-a/www"}
	ns := set("deleg.example.test", "NS", 300, "ns.evil.example")
	glue := set("ns1.deleg.example.test", "A", 300, "192.0.2.53")
	ownerWWW := set("www.deleg.example.test", "A", 300, "192.0.2.120")
	ownerApex := set("deleg.example.test", "A", 300, "192.0.2.121")
	base := []provider.RecordSet{apexSOA, apexNS}
	tests := []struct {
		name    string
		guest   bool
		desired []provider.RecordSet
		current []provider.RecordSet
		refused map[string]string // key -> substring of its conflict message; nil = none
	}{
		{"a name below the cut held by the zone's owner", true, []provider.RecordSet{ns},
			append(base, ownerWWW, claim(owner, ownerWWW.Name, "A", 300, "192.0.2.120")),
			map[string]string{"deleg.example.test/NS": "would hide names held outside namespace tenant-b: www.deleg.example.test/A (owner c1 resource DNSEndpoint/tenant-a/www)"}},
		{"a name at the cut held by the zone's owner", true, []provider.RecordSet{ns},
			append(base, ownerApex, claim(owner, ownerApex.Name, "A", 300, "192.0.2.121")),
			map[string]string{"deleg.example.test/NS": "deleg.example.test/A (owner c1"}},
		{"a set without a registry record below the cut", true, []provider.RecordSet{ns}, append(base, ownerWWW),
			map[string]string{"deleg.example.test/NS": "www.deleg.example.test/A (no registry record)"}},
		{"the glue of a refused delegation is refused too", true, []provider.RecordSet{ns, glue},
			append(base, ownerWWW, claim(owner, ownerWWW.Name, "A", 300, "192.0.2.120")),
			map[string]string{"deleg.example.test/NS": "would hide", "ns1.deleg.example.test/A": "below the refused delegation at deleg.example.test"}},
		{"names of the guest's own namespace are not hidden from anyone else", true, []provider.RecordSet{ns},
			append(base, ownerWWW, claim(guest2, ownerWWW.Name, "A", 300, "192.0.2.120")), nil},
		{"an empty subtree delegates", true, []provider.RecordSet{ns, glue}, base, nil},
		{"a sibling name is not below the cut", true, []provider.RecordSet{ns},
			append(base, set("xdeleg.example.test", "A", 300, "192.0.2.9"), set("other.example.test", "A", 300, "192.0.2.8")), nil},
		{"the rule is the guest's: the zone's own namespace delegates as before", false, []provider.RecordSet{ns},
			append(base, ownerWWW, claim(owner, ownerWWW.Name, "A", 300, "192.0.2.120")), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := Compute(Input{Zone: zone, Self: guest, Mode: SingleOwner, Desired: tc.desired, Current: tc.current, Guest: tc.guest})
			got := map[string]string{}
			for _, c := range res.Conflicts {
				got[c.Key.String()] = c.Message
				if c.Reason != ReasonOwnershipConflict {
					t.Errorf("%s: reason %s", c.Key, c.Reason)
				}
			}
			for k, want := range tc.refused {
				if !strings.Contains(got[k], want) {
					t.Errorf("conflict %s = %q, want it to say %q", k, got[k], want)
				}
			}
			if len(got) != len(tc.refused) {
				t.Errorf("conflicts %v, want only %v", got, tc.refused)
			}
			if tc.refused != nil && len(res.Changes) != 0 {
				t.Errorf("a refused delegation wrote %v", res.Changes)
			}
			if tc.refused == nil && len(res.Records) != len(tc.desired) {
				t.Errorf("records %v, want every desired set created", res.Records)
			}
		})
	}
}

// TestCompute_GuestRefusedDelegationKeepsWhatItHolds: a delegation refused after it was
// published (the owner's name appeared below it) is left as it is: no write at all, its claim
// included.
func TestCompute_GuestRefusedDelegationKeepsWhatItHolds(t *testing.T) {
	guest := registry.Contributor{OwnerID: "c1", Resource: "DNSEndpoint/tenant-b/deleg"}
	owner := registry.Contributor{OwnerID: "c1", Resource: "DNSEndpoint/tenant-a/www"}
	ns := set("deleg.example.test", "NS", 300, "ns.evil.example")
	www := set("www.deleg.example.test", "A", 300, "192.0.2.120")
	current := []provider.RecordSet{apexSOA, apexNS, ns, claim(guest, ns.Name, "NS", 300, "ns.evil.example"), www, claim(owner, www.Name, "A", 300, "192.0.2.120")}
	changed := set("deleg.example.test", "NS", 300, "ns.other.example")
	res := Compute(Input{Zone: zone, Self: guest, Mode: SingleOwner, Desired: []provider.RecordSet{changed}, Current: current, Guest: true})
	if len(res.Changes) != 0 || len(res.Conflicts) != 1 {
		t.Fatalf("changes %v conflicts %v; want no change and one conflict", res.Changes, res.Conflicts)
	}
}
