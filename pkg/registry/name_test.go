package registry

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

var c1 = Contributor{OwnerID: "c1", Resource: "DNSEndpoint/team-a/www"}

// TestName_IsStableAcrossReleases pins the exact names: a change here would
// orphan every registry record already written.
func TestName_IsStableAcrossReleases(t *testing.T) {
	for _, tc := range []struct {
		key  provider.RecordSetKey
		cuts []string
		want string
	}{
		{provider.RecordSetKey{Name: "www.example.test", Type: "A"}, nil, "dp-a-ubyficdjd4-www.example.test"},
		{provider.RecordSetKey{Name: "*.example.test", Type: "A"}, nil, "dp-a-ubyficdjd4--w.example.test"},
		{provider.RecordSetKey{Name: "example.test", Type: "NS"}, nil, "dp-ns-ubyficdjd4--apex.example.test"},
		{provider.RecordSetKey{Name: "www.example.test", Type: "A", SetIdentifier: "eu"}, nil, "dp-a-yznxk5vj5c-www.example.test"},
		{provider.RecordSetKey{Name: "ns1.child.example.test", Type: "A"}, []string{"child.example.test"}, "dp-a-ubyficdjd4--gui72mqskisxmbfh3.example.test"},
	} {
		if got := Name("example.test", c1, tc.key, tc.cuts...); got != tc.want {
			t.Errorf("Name(%s, cuts %v) = %s, want %s", tc.key, tc.cuts, got, tc.want)
		}
	}
}

func TestName_SiblingPrefixesFirstLabel(t *testing.T) {
	h := contributorHash(c1, "")
	for _, tc := range []struct{ name, typ, want string }{
		{"www.example.test", "A", "dp-a-" + h + "-www.example.test"},
		{"WWW.Example.Test.", "CNAME", "dp-cname-" + h + "-www.example.test"},
		{"a.b.c.example.test", "AAAA", "dp-aaaa-" + h + "-a.b.c.example.test"},
		{"_acme-challenge.example.test", "TXT", "dp-txt-" + h + "-_acme-challenge.example.test"},
		{"child.example.test", "NS", "dp-ns-" + h + "-child.example.test"},
		{"*.apps.example.test", "A", "dp-a-" + h + "--w.apps.example.test"},
		{"example.test", "MX", "dp-mx-" + h + "--apex.example.test"},
	} {
		got := Name("example.test.", c1, provider.RecordSetKey{Name: tc.name, Type: tc.typ})
		if got != tc.want {
			t.Errorf("Name(%s/%s) = %s, want %s", tc.name, tc.typ, got, tc.want)
		}
		if dnswire.Parent(got) != dnswire.Parent(dnswire.Dotless(tc.name)) && dnswire.Dotless(tc.name) != "example.test" {
			t.Errorf("Name(%s) = %s is not a sibling", tc.name, got)
		}
	}
}

func TestName_HashesLabelsThatCouldCollideOrOverflow(t *testing.T) {
	long := strings.Repeat("a", 50)
	h := contributorHash(c1, "")
	for _, tc := range []struct{ name, want string }{
		{long + ".example.test", "dp-a-" + h + "--h" + hash32(long, nameHashLen) + ".example.test"},
		{"-w.example.test", "dp-a-" + h + "--h" + hash32("-w", nameHashLen) + ".example.test"},
		{"-apex.example.test", "dp-a-" + h + "--h" + hash32("-apex", nameHashLen) + ".example.test"},
	} {
		if got := Name("example.test", c1, provider.RecordSetKey{Name: tc.name, Type: "A"}); got != tc.want {
			t.Errorf("Name(%s) = %s, want %s", tc.name, got, tc.want)
		}
	}
	if a, b := Name("example.test", c1, provider.RecordSetKey{Name: "-w.example.test", Type: "A"}),
		Name("example.test", c1, provider.RecordSetKey{Name: "*.example.test", Type: "A"}); a == b {
		t.Errorf("label \"-w\" and wildcard share registry name %s", a)
	}
}

func TestName_HoistsAboveZoneCuts(t *testing.T) {
	zone := "example.test"
	cuts := []string{"child.example.test", "deep.child.example.test", "example.test", "other.test"}
	for _, tc := range []struct{ name, wantParent string }{
		{"ns1.child.example.test", "example.test"},
		{"x.deep.child.example.test", "example.test"},
		{"child.example.test", "example.test"},               // at the cut: a plain sibling
		{"deep.child.example.test", "example.test"},          // below child: hoisted
		{"www.sibling.example.test", "sibling.example.test"}, // no cut above: sibling
	} {
		got := Name(zone, c1, provider.RecordSetKey{Name: tc.name, Type: "A"}, cuts...)
		if dnswire.Parent(got) != tc.wantParent {
			t.Errorf("Name(%s) = %s, want parent %s", tc.name, got, tc.wantParent)
		}
	}
}

// TestName_NeverAtOrBelowACutAndAlwaysValid checks every shape of name
// against every cut: the registry name is a valid DNS name in the zone, never
// a managed name, never at or below a cut, and recognised by IsRegistryName.
func TestName_NeverAtOrBelowACutAndAlwaysValid(t *testing.T) {
	zone := "example.test"
	cuts := []string{"child.example.test", "b.a.example.test"}
	long := strings.Repeat("x", 63)
	names := []string{
		"example.test", "www.example.test", "*.example.test", "child.example.test",
		"ns1.child.example.test", "*.child.example.test", "a.example.test", "b.a.example.test",
		"c.b.a.example.test", long + ".example.test", long + "." + long + "." + long + ".example.test",
		"-x.example.test", "_srv._tcp.example.test",
		"a." + long + "." + long + "." + long + "." + strings.Repeat("y", 44) + ".example.test", // 251: no room to prefix
	}
	types := []string{"A", "AAAA", "CNAME", "NS", "TXT", "OPENPGPKEY", "TYPE65534"}
	seen := map[string]string{}
	for _, n := range names {
		for _, typ := range types {
			for _, set := range []string{"", "eu", "a very long set identifier " + long} {
				key := provider.RecordSetKey{Name: n, Type: typ, SetIdentifier: set}
				got := Name(zone, c1, key, cuts...)
				if _, err := provider.ValidateName(got); err != nil {
					t.Errorf("Name(%s) = %s: %v", key, got, err)
				}
				if !dnswire.IsStrictSubdomain(got, zone) {
					t.Errorf("Name(%s) = %s: not strictly inside %s", key, got, zone)
				}
				for _, c := range cuts {
					if dnswire.IsSubdomain(got, c) {
						t.Errorf("Name(%s) = %s: at or below cut %s", key, got, c)
					}
				}
				if !IsRegistryName(got) {
					t.Errorf("IsRegistryName(%s) = false", got)
				}
				if prev, dup := seen[got]; dup {
					t.Errorf("Name(%s) = Name(%s) = %s", key, prev, got)
				}
				seen[got] = key.String()
				if e := (Entry{OwnerID: c1.OwnerID, Resource: c1.Resource, Name: n, Type: typ, SetIdentifier: set}); !nameMatches(zone, got, e) {
					t.Errorf("nameMatches(%s, %s) = false", got, key)
				}
			}
		}
	}
}

func TestName_DistinctPerContributorTypeAndSet(t *testing.T) {
	key := provider.RecordSetKey{Name: "www.example.test", Type: "A"}
	names := map[string]string{}
	for i, tc := range []struct {
		c   Contributor
		key provider.RecordSetKey
	}{
		{c1, key},
		{Contributor{OwnerID: "c2", Resource: c1.Resource}, key},
		{Contributor{OwnerID: c1.OwnerID, Resource: "DNSEndpoint/team-a/other"}, key},
		{Contributor{OwnerID: "c1D", Resource: "NSEndpoint/team-a/www"}, key},
		{c1, provider.RecordSetKey{Name: key.Name, Type: "AAAA"}},
		{c1, provider.RecordSetKey{Name: key.Name, Type: "A", SetIdentifier: "eu"}},
	} {
		n := Name("example.test", tc.c, tc.key)
		if prev, dup := names[n]; dup {
			t.Errorf("case %d shares %s with %s", i, n, prev)
		}
		names[n] = fmt.Sprint(i)
		if n == dnswire.Dotless(tc.key.Name) {
			t.Errorf("registry name equals the managed name %s", n)
		}
	}
}

func TestIsRegistryName_RecognisesOnlyTheSyntax(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"dp-a-ubyficdjd4-www.example.test", true},
		{"DP-A-UBYFICDJD4-www.example.test.", true},
		{"dp-a-ubyficdjd4--w.example.test", true},
		{"dp-ns-ubyficdjd4--apex.example.test", true},
		{"dp-a-ubyficdjd4-", false},
		{"dp-a-ubyficdjd4www.example.test", false},
		{"dp-a-ubyficdjd1-www.example.test", false}, // '1' is not base32
		{"dp--ubyficdjd4-www.example.test", false},
		{"dp-a-short-www.example.test", false},
		{"www.dp-a-ubyficdjd4-x.example.test", false},
		{"a-www.example.test", false},
		{"www.example.test", false},
		{"", false},
	} {
		if got := IsRegistryName(tc.name); got != tc.want {
			t.Errorf("IsRegistryName(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRecordSet_IsOneTXTValueAtName(t *testing.T) {
	e := sampleEntry()
	rs := RecordSet("example.test", e)
	want := provider.RecordSet{Name: "dp-a-ubyficdjd4-www.example.test", Type: "TXT", TTL: RecordTTL, Targets: []string{e.Encode()}}
	if !rs.Equal(want) {
		t.Errorf("RecordSet = %v, want %v", rs, want)
	}
	if _, err := provider.CanonicalRecordSet(rs); err != nil {
		t.Errorf("RecordSet is not a valid record set: %v", err)
	}
}

func TestKeyFromName_InvertsPlainSuffixes(t *testing.T) {
	for _, tc := range []struct {
		reg, name, typ string
		ok             bool
	}{
		{"dp-a-ubyficdjd4-www.example.test", "www.example.test", "A", true},
		{"dp-a-ubyficdjd4--w.example.test", "*.example.test", "A", true},
		{"dp-ns-ubyficdjd4--apex.example.test", "example.test", "NS", true},
		{"dp-a-ubyficdjd4--gui72mqskisxmbfh3.example.test", "", "", false},
		{"www.example.test", "", "", false},
	} {
		n, typ, ok := keyFromName(tc.reg)
		if n != tc.name || typ != tc.typ || ok != tc.ok {
			t.Errorf("keyFromName(%s) = %q, %q, %v; want %q, %q, %v", tc.reg, n, typ, ok, tc.name, tc.typ, tc.ok)
		}
	}
}
