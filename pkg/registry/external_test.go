package registry

import (
	"testing"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

// The names external-dns v0.22 writes (registry/mapper.AffixNameMapper.ToTXTName), for the
// affix and wildcard options; the expected names were checked against external-dns' own mapper
// tests and the records its TXT registry writes to PowerDNS in make e2e.
func TestExternalNaming_TXTName(t *testing.T) {
	for _, tc := range []struct {
		naming     ExternalNaming
		name, typ  string
		want       string
		wantLegacy string
	}{
		{ExternalNaming{}, "www.example.test", "A", "a-www.example.test", "www.example.test"},
		{ExternalNaming{}, "www.example.test", "AAAA", "aaaa-www.example.test", "www.example.test"},
		{ExternalNaming{}, "api.example.test", "CNAME", "cname-api.example.test", "api.example.test"},
		{ExternalNaming{}, "*.example.test", "A", "a-*.example.test", "*.example.test"},
		{ExternalNaming{}, "example.test", "A", "a-example.test", "example.test"},
		{ExternalNaming{Prefix: "pre-"}, "www.example.test", "A", "pre-a-www.example.test", "pre-www.example.test"},
		{ExternalNaming{Prefix: "_ext."}, "www.example.test", "TXT", "_ext.txt-www.example.test", "_ext.www.example.test"},
		{ExternalNaming{Prefix: "%{record_type}-"}, "www.example.test", "MX", "mx-www.example.test", "-www.example.test"},
		{ExternalNaming{Prefix: "%{record_type}."}, "www.example.test", "A", "a.www.example.test", ".www.example.test"},
		{ExternalNaming{Prefix: "Reg-%{record_type}-"}, "www.example.test", "SRV", "reg-srv-www.example.test", "reg--www.example.test"},
		{ExternalNaming{Suffix: "-suf"}, "www.example.test", "A", "a-www-suf.example.test", "www-suf.example.test"},
		{ExternalNaming{Suffix: "-%{record_type}"}, "www.example.test", "CNAME", "www-cname.example.test", "www-.example.test"},
		{ExternalNaming{Suffix: ".reg"}, "www.example.test", "A", "a-www.reg.example.test", "www.reg.example.test"},
		{ExternalNaming{Prefix: "txt-", WildcardReplacement: "wild"}, "*.example.test", "A", "txt-a-wild.example.test", "txt-wild.example.test"},
		{ExternalNaming{Prefix: "txt-", WildcardReplacement: "wild"}, "*.example.test", "TXT", "txt-txt-wild.example.test", "txt-wild.example.test"},
		{ExternalNaming{WildcardReplacement: "Any"}, "*.sub.example.test", "AAAA", "aaaa-any.sub.example.test", "any.sub.example.test"},
		{ExternalNaming{WildcardReplacement: "wild"}, "www.example.test", "A", "a-www.example.test", "www.example.test"},
		{ExternalNaming{Suffix: "-%{record_type}", WildcardReplacement: "wild"}, "*.example.test", "A", "wild-a.example.test", "wild-.example.test"},
	} {
		if got := tc.naming.TXTName(tc.name, tc.typ); got != tc.want {
			t.Errorf("%+v.TXTName(%s, %s) = %q, want %q", tc.naming, tc.name, tc.typ, got, tc.want)
		}
		if got := tc.naming.LegacyTXTName(tc.name); got != tc.wantLegacy {
			t.Errorf("%+v.LegacyTXTName(%s) = %q, want %q", tc.naming, tc.name, got, tc.wantLegacy)
		}
	}
}

func TestParseExternalValue(t *testing.T) {
	for _, tc := range []struct {
		value           string
		owner, resource string
		ok              bool
	}{
		{"heritage=external-dns,external-dns/owner=ext1,external-dns/resource=crd/default/www", "ext1", "crd/default/www", true},
		{`"heritage=external-dns,external-dns/owner=ext1,external-dns/resource=ingress/ns/app"`, "ext1", "ingress/ns/app", true},
		{"external-dns/owner=ext2,heritage=external-dns", "ext2", "", true}, // heritage anywhere, as external-dns reads it
		{"heritage=external-dns", "(unknown)", "", true},
		{"heritage=external-dns,external-dns/owner=a,external-dns/ownedRecord=x.example.test", "a", "", true},
		{"heritage=dnsplane&v=1&owner=c1", "", "", false},
		{"heritage=other,external-dns/owner=ext1", "", "", false},
		{"external-dns/owner=ext1", "", "", false},
		{"v=spf1 -all", "", "", false},
		{"", "", "", false},
	} {
		c, ok := ParseExternalValue(tc.value)
		if ok != tc.ok || c.Owner != tc.owner || c.Resource != tc.resource {
			t.Errorf("ParseExternalValue(%q) = %+v, %v; want owner %q resource %q, %v", tc.value, c, ok, tc.owner, tc.resource, tc.ok)
		}
	}
}

func TestIndex_ExternalFor(t *testing.T) {
	withSet := txt("a-weighted.example.test", "heritage=external-dns,external-dns/owner=ext1")
	withSet.SetIdentifier = "blue"
	ix := NewIndex(zone, []provider.RecordSet{
		txt("a-www.example.test", "heritage=external-dns,external-dns/owner=ext1,external-dns/resource=crd/default/www"),
		txt("www.example.test", "heritage=external-dns,external-dns/owner=ext0", "v=spf1 -all"),
		txt("pre-a-api.example.test", `"heritage=external-dns,external-dns/owner=ext2"`),
		txt("txt-a-wild.example.test", "heritage=external-dns,external-dns/owner=ext3"),
		txt("mixed.example.test", "heritage=external-dns,external-dns/owner=ext4"),
		withSet,
		txt("spf.example.test", "v=spf1 -all"),
	})
	type claim struct {
		owner  string
		legacy bool
		other  int
	}
	for _, tc := range []struct {
		key    provider.RecordSetKey
		naming ExternalNaming
		want   []claim
	}{
		{provider.RecordSetKey{Name: "www.example.test", Type: "A"}, ExternalNaming{}, []claim{{"ext1", false, 0}, {"ext0", true, 1}}},
		{provider.RecordSetKey{Name: "www.example.test", Type: "AAAA"}, ExternalNaming{}, nil}, // no legacy record for AAAA
		{provider.RecordSetKey{Name: "www.example.test", Type: "TXT"}, ExternalNaming{}, nil},  // the legacy name is the set itself
		{provider.RecordSetKey{Name: "www.example.test", Type: "A"}, ExternalNaming{Prefix: "pre-"}, nil},
		{provider.RecordSetKey{Name: "api.example.test", Type: "A"}, ExternalNaming{Prefix: "pre-"}, []claim{{"ext2", false, 0}}},
		{provider.RecordSetKey{Name: "api.example.test", Type: "A"}, ExternalNaming{}, nil},
		{provider.RecordSetKey{Name: "*.example.test", Type: "A"}, ExternalNaming{Prefix: "txt-", WildcardReplacement: "wild"}, []claim{{"ext3", false, 0}}},
		{provider.RecordSetKey{Name: "*.example.test", Type: "A"}, ExternalNaming{Prefix: "txt-"}, nil},
		{provider.RecordSetKey{Name: "mixed.example.test", Type: "CNAME"}, ExternalNaming{}, []claim{{"ext4", true, 0}}},
		{provider.RecordSetKey{Name: "weighted.example.test", Type: "A", SetIdentifier: "blue"}, ExternalNaming{}, []claim{{"ext1", false, 0}}},
		{provider.RecordSetKey{Name: "weighted.example.test", Type: "A", SetIdentifier: "green"}, ExternalNaming{}, nil},
		{provider.RecordSetKey{Name: "spf.example.test", Type: "A"}, ExternalNaming{}, nil},
	} {
		got := ix.ExternalFor(tc.key, tc.naming)
		var g []claim
		for _, r := range got {
			for _, c := range r.Claims {
				g = append(g, claim{c.Owner, r.Legacy, r.Other})
			}
		}
		if len(g) != len(tc.want) {
			t.Errorf("ExternalFor(%s, %+v) = %+v, want %+v", tc.key, tc.naming, g, tc.want)
			continue
		}
		for i := range g {
			if g[i] != tc.want[i] {
				t.Errorf("ExternalFor(%s, %+v) = %+v, want %+v", tc.key, tc.naming, g, tc.want)
				break
			}
		}
	}
	got := ix.ExternalFor(provider.RecordSetKey{Name: "www.example.test", Type: "A"}, ExternalNaming{})
	got[0].Set.Targets[0] = "x"
	if again := ix.ExternalFor(provider.RecordSetKey{Name: "www.example.test", Type: "A"}, ExternalNaming{}); again[0].Set.Targets[0] == "x" {
		t.Error("ExternalFor returned the index's own set")
	}
}
