package plan

import (
	"slices"
	"testing"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

// extTXT is external-dns' registry record for owner at name, as its PowerDNS provider lists it.
func extTXT(name, owner, resource string, others ...string) provider.RecordSet {
	v := `"heritage=external-dns,external-dns/owner=` + owner + `,external-dns/resource=` + resource + `"`
	return set(name, "TXT", 300, append([]string{v}, others...)...)
}

var adoptExt1 = ExternalDNS{AdoptOwner: "ext1"}

var adoptCases = []planCase{
	{
		name: "takeover, same value: claim first, then remove the external-dns record; the set is not touched",
		ext:  adoptExt1, desired: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1")},
		current: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1"), extTXT("a-www.example.test", "ext1", "crd/default/www")},
		want: []provider.Change{
			create(claim(self, "www.example.test", "A", 300, "192.0.2.1")),
			del(extTXT("a-www.example.test", "ext1", "crd/default/www")),
		},
	},
	{
		name: "takeover, new value: claim, update in place (never delete and create), then remove the external-dns record",
		ext:  adoptExt1, desired: []provider.RecordSet{set("api.example.test", "CNAME", 60, "lb2.example.net")},
		current: []provider.RecordSet{set("api.example.test", "CNAME", 300, "lb.example.net"), extTXT("cname-api.example.test", "ext1", "service/default/api")},
		want: []provider.Change{
			create(claim(self, "api.example.test", "CNAME", 60, "lb2.example.net")),
			update(set("api.example.test", "CNAME", 300, "lb.example.net"), set("api.example.test", "CNAME", 60, "lb2.example.net")),
			del(extTXT("cname-api.example.test", "ext1", "service/default/api")),
		},
	},
	{
		name: "another external-dns owner: conflict, never touched",
		ext:  adoptExt1, desired: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.9")},
		current:   []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1"), extTXT("a-www.example.test", "ext2", "crd/default/www")},
		conflicts: map[string]string{"www.example.test/A": "held by external-dns owner ext2"},
	},
	{
		name: "the adopted owner and another one both claim the key: conflict naming the other",
		ext:  adoptExt1, desired: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1")},
		current: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1"),
			extTXT("a-www.example.test", "ext1", "crd/default/www"), extTXT("www.example.test", "ext2", "crd/other/www")},
		conflicts: map[string]string{"www.example.test/A": "held by external-dns owner ext2"},
	},
	{
		name:      "no adoption configured: external-dns' set stays a conflict",
		desired:   []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1")},
		current:   []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1"), extTXT("a-www.example.test", "ext1", "crd/default/www")},
		conflicts: map[string]string{"www.example.test/A": "held by external-dns owner ext1"},
	},
	{
		name:    "--txt-prefix: found under its name, and the default-named record of another owner is not ours to judge",
		ext:     ExternalDNS{AdoptOwner: "ext1", Naming: registry.ExternalNaming{Prefix: "pre-"}},
		desired: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1")},
		current: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1"), extTXT("pre-a-www.example.test", "ext1", "crd/default/www")},
		want: []provider.Change{
			create(claim(self, "www.example.test", "A", 300, "192.0.2.1")),
			del(extTXT("pre-a-www.example.test", "ext1", "crd/default/www")),
		},
	},
	{
		name:    "--txt-wildcard-replacement: a wildcard's record",
		ext:     ExternalDNS{AdoptOwner: "ext1", Naming: registry.ExternalNaming{WildcardReplacement: "wild"}},
		desired: []provider.RecordSet{set("*.example.test", "A", 300, "192.0.2.1")},
		current: []provider.RecordSet{set("*.example.test", "A", 300, "192.0.2.1"), extTXT("a-wild.example.test", "ext1", "crd/default/wild")},
		want: []provider.Change{
			create(claim(self, "*.example.test", "A", 300, "192.0.2.1")),
			del(extTXT("a-wild.example.test", "ext1", "crd/default/wild")),
		},
	},
	{
		name: "legacy (typeless) record alone at the name: removed",
		ext:  adoptExt1, desired: []provider.RecordSet{set("old.example.test", "A", 300, "192.0.2.1")},
		current: []provider.RecordSet{set("old.example.test", "A", 300, "192.0.2.1"), extTXT("old.example.test", "ext1", "service/default/old")},
		want: []provider.Change{
			create(claim(self, "old.example.test", "A", 300, "192.0.2.1")),
			del(extTXT("old.example.test", "ext1", "service/default/old")),
		},
	},
	{
		name: "legacy record that also claims another set at the name: kept",
		ext:  adoptExt1, desired: []provider.RecordSet{set("old.example.test", "A", 300, "192.0.2.1")},
		current: []provider.RecordSet{set("old.example.test", "A", 300, "192.0.2.1"), set("old.example.test", "MX", 300, "10 mail.example.test"),
			extTXT("old.example.test", "ext1", "service/default/old")},
		want: []provider.Change{create(claim(self, "old.example.test", "A", 300, "192.0.2.1"))},
	},
	{
		name: "external-dns record with other TXT data: only its registry value is removed",
		ext:  adoptExt1, desired: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1")},
		current: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1"), extTXT("a-www.example.test", "ext1", "crd/default/www", "v=spf1 -all")},
		want: []provider.Change{
			create(claim(self, "www.example.test", "A", 300, "192.0.2.1")),
			update(extTXT("a-www.example.test", "ext1", "crd/default/www", "v=spf1 -all"), set("a-www.example.test", "TXT", 300, "v=spf1 -all")),
		},
	},
	{
		name: "a takeover left half done (claim written, external-dns record still there): the record is removed",
		ext:  adoptExt1, desired: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1")},
		current: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1"), claim(self, "www.example.test", "A", 300, "192.0.2.1"),
			extTXT("a-www.example.test", "ext1", "crd/default/www")},
		want: []provider.Change{del(extTXT("a-www.example.test", "ext1", "crd/default/www"))},
	},
	{
		name: "a stale record of the adopted owner, its set gone: create, then remove it",
		ext:  adoptExt1, desired: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1")},
		current: []provider.RecordSet{extTXT("a-www.example.test", "ext1", "crd/default/www")},
		want: []provider.Change{
			create(claim(self, "www.example.test", "A", 300, "192.0.2.1")),
			create(set("www.example.test", "A", 300, "192.0.2.1")),
			del(extTXT("a-www.example.test", "ext1", "crd/default/www")),
		},
	},
	{
		name: "a record of another owner whose set is gone: still a conflict (that external-dns would recreate it)",
		ext:  adoptExt1, desired: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1")},
		current:   []provider.RecordSet{extTXT("a-www.example.test", "ext2", "crd/default/www")},
		conflicts: map[string]string{"www.example.test/A": "held by external-dns owner ext2"},
	},
	{
		name: "double claim: dnsplane holds the set and another external-dns owner claims it too",
		ext:  adoptExt1, desired: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.2")},
		current: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1"), claim(self, "www.example.test", "A", 300, "192.0.2.1"),
			extTXT("a-www.example.test", "ext2", "crd/default/www")},
		conflicts: map[string]string{"www.example.test/A": "claimed twice: dnsplane's registry holds it, and so does external-dns owner ext2 (resource crd/default/www) at a-www.example.test"},
		reasons:   map[string]string{"www.example.test/A": ReasonDoubleClaim},
	},
	{
		name:    "double claim without adoption configured",
		desired: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1")},
		current: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1"), claim(self, "www.example.test", "A", 300, "192.0.2.1"),
			extTXT("www.example.test", "ext1", "crd/default/www")},
		conflicts: map[string]string{"www.example.test/A": "claimed twice"},
		reasons:   map[string]string{"www.example.test/A": ReasonDoubleClaim},
	},
	{
		name: "a key Self no longer desires that another external-dns owner claims: double claim, the set and Self's claim stay",
		current: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1"), claim(self, "www.example.test", "A", 300, "192.0.2.1"),
			extTXT("a-www.example.test", "ext2", "crd/default/www")},
		conflicts: map[string]string{"www.example.test/A": "claimed twice: dnsplane's registry holds it, and so does external-dns owner ext2"},
		reasons:   map[string]string{"www.example.test/A": ReasonDoubleClaim},
	},
	{
		name:    "release of a key another external-dns owner claims: the set stays for that owner, only Self's claim goes, kept and named",
		release: true,
		current: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1"), claim(self, "www.example.test", "A", 300, "192.0.2.1"),
			extTXT("a-www.example.test", "ext2", "crd/default/www")},
		want: []provider.Change{del(claim(self, "www.example.test", "A", 300, "192.0.2.1"))},
		kept: map[string]string{"www.example.test/A": "claimed twice: dnsplane's registry holds it, and so does external-dns owner ext2 (resource crd/default/www) at a-www.example.test"},
	},
	{
		name:    "release beside a double claim and a malformed claim: both sets kept and named, every set of Self's that is free deleted",
		release: true,
		current: []provider.RecordSet{
			set("www.example.test", "A", 300, "192.0.2.1"), claim(self, "www.example.test", "A", 300, "192.0.2.1"),
			extTXT("a-www.example.test", "ext2", "crd/default/www"),
			set("api.example.test", "A", 300, "192.0.2.2"), claim(self, "api.example.test", "A", 300, "192.0.2.2"),
			set(claim(stranger, "api.example.test", "A", 1).Name, "TXT", 300, "junk"),
			set("free.example.test", "A", 300, "192.0.2.3"), claim(self, "free.example.test", "A", 300, "192.0.2.3"),
		},
		want: []provider.Change{
			del(set("free.example.test", "A", 300, "192.0.2.3")),
			del(claim(self, "api.example.test", "A", 300, "192.0.2.2")),
			del(claim(self, "free.example.test", "A", 300, "192.0.2.3")),
			del(claim(self, "www.example.test", "A", 300, "192.0.2.1")),
		},
		kept: map[string]string{
			"www.example.test/A": "claimed twice",
			"api.example.test/A": "registry record malformed",
		},
	},
	{
		name: "a key Self no longer desires whose adopted owner's record is left: the takeover finishes, the set goes",
		ext:  adoptExt1,
		current: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1"), claim(self, "www.example.test", "A", 300, "192.0.2.1"),
			extTXT("a-www.example.test", "ext1", "crd/default/www")},
		want: []provider.Change{del(set("www.example.test", "A", 300, "192.0.2.1")), del(extTXT("a-www.example.test", "ext1", "crd/default/www")),
			del(claim(self, "www.example.test", "A", 300, "192.0.2.1"))},
	},
	{
		name: "takeover under create-only: the set keeps its value, the claim records it",
		ext:  adoptExt1, policy: PolicyCreateOnly, desired: []provider.RecordSet{set("www.example.test", "A", 60, "192.0.2.2")},
		current: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1"), extTXT("a-www.example.test", "ext1", "crd/default/www")},
		want: []provider.Change{
			create(claim(self, "www.example.test", "A", 300, "192.0.2.1")),
			del(extTXT("a-www.example.test", "ext1", "crd/default/www")),
		},
		skipped: []provider.Change{update(set("www.example.test", "A", 300, "192.0.2.1"), set("www.example.test", "A", 60, "192.0.2.2"))},
	},
	{
		name: "takeover under upsert-only: updates are allowed",
		ext:  adoptExt1, policy: PolicyUpsertOnly, desired: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.2")},
		current: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1"), extTXT("a-www.example.test", "ext1", "crd/default/www")},
		want: []provider.Change{
			create(claim(self, "www.example.test", "A", 300, "192.0.2.2")),
			update(set("www.example.test", "A", 300, "192.0.2.1"), set("www.example.test", "A", 300, "192.0.2.2")),
			del(extTXT("a-www.example.test", "ext1", "crd/default/www")),
		},
	},
}

// adopted reports whether change c is one a takeover may make without a dnsplane registry
// record: to a set whose only external-dns claims are in.ExternalDNS.AdoptOwner's, or to an
// external-dns registry record of that owner.
func adopted(in Input, ix *registry.Index, c provider.Change) bool {
	owner := in.ExternalDNS.AdoptOwner
	if owner == "" || c.Before == nil {
		return false
	}
	only := func(claims []registry.ExternalClaim) bool {
		return len(claims) > 0 && !slices.ContainsFunc(claims, func(x registry.ExternalClaim) bool { return x.Owner != owner })
	}
	var own []registry.ExternalClaim
	for _, v := range c.Before.Targets {
		if x, ok := registry.ParseExternalValue(v); ok {
			own = append(own, x)
		}
	}
	if c.Before.Type == "TXT" && only(own) {
		return true
	}
	var claims []registry.ExternalClaim
	for _, r := range ix.ExternalFor(c.Key(), in.ExternalDNS.Naming) {
		claims = append(claims, r.Claims...)
	}
	return only(claims)
}

func TestPlan_TakesOverAnExternalDNSOwnerWithNoGap(t *testing.T) { runCases(t, adoptCases) }
