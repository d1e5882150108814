package registry

import (
	"strings"
	"testing"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// FuzzParseExternalValue pins that ParseExternalValue never panics, that a value it accepts
// always names an owner ("(unknown)" when none is written), and that the value external-dns
// v0.22 writes for an owner and resource (without commas or quotes, which its labels never
// hold) reads back as that owner and resource. Values come from zones that anyone can write.
func FuzzParseExternalValue(f *testing.F) {
	for _, seed := range []struct{ value, owner, resource string }{
		{"heritage=external-dns,external-dns/owner=default,external-dns/resource=ingress/default/app", "default", "ingress/default/app"},
		{`"heritage=external-dns,external-dns/owner=default"`, "o", ""},
		{"heritage=external-dns", "", "service/ns/x"},
		{"heritage=other,external-dns/owner=x", "x=y", "a=b"},
		{"external-dns/owner=x,heritage=external-dns", " o ", "r"},
		{"v=spf1 -all", "", ""},
		{"heritage=dnsplane&v=1&owner=c1", "c1", ""},
		{`"`, `"`, ","},
	} {
		f.Add(seed.value, seed.owner, seed.resource)
	}
	f.Fuzz(func(t *testing.T, value, owner, resource string) {
		if c, ok := ParseExternalValue(value); ok && c.Owner == "" {
			t.Fatalf("ParseExternalValue(%q) accepted with an empty owner", value)
		}
		if owner == "" || strings.ContainsAny(owner+resource, `,"`) ||
			strings.TrimSpace(owner) != owner || strings.TrimSpace(resource) != resource {
			return
		}
		written := "heritage=external-dns,external-dns/owner=" + owner + ",external-dns/resource=" + resource
		for _, v := range []string{written, `"` + written + `"`} {
			c, ok := ParseExternalValue(v)
			if !ok || c.Owner != owner || c.Resource != resource {
				t.Fatalf("ParseExternalValue(%q) = %+v, %v; want owner %q resource %q", v, c, ok, owner, resource)
			}
		}
	})
}

// FuzzExternalNaming pins, for any affixes and names, that ExternalNaming's names never panic,
// that both keep the managed name's parent (only the first label changes, so the registry
// record stays in the managed name's zone), that the zero naming is external-dns' default
// ("<type>-<name>" and the name itself, for a canonical name), and that NewIndex with an external-dns value at
// TXTName finds it with ExternalFor for a type mnemonic (RecordSet.Type's syntax): what we write as
// external-dns is what we read back.
func FuzzExternalNaming(f *testing.F) {
	for _, seed := range []struct{ prefix, suffix, wildcard, name, typ string }{
		{"", "", "", "www.example.test", "A"},
		{"pre-", "", "", "www.example.test", "AAAA"},
		{"_ext.", "", "", "www.example.test", "TXT"},
		{"%{record_type}.", "", "", "www.example.test", "A"},
		{"Reg-%{record_type}-", "", "", "www.example.test", "SRV"},
		{"", "-%{record_type}", "", "www.example.test", "CNAME"},
		{"", "", "star", "*.example.test", "A"},
		{"", "", "", "example.test", "MX"},
		{"%{record_type}", "%{record_type}", "", "", ""},
	} {
		f.Add(seed.prefix, seed.suffix, seed.wildcard, seed.name, seed.typ)
	}
	f.Fuzz(func(t *testing.T, prefix, suffix, wildcard, name, typ string) {
		n := ExternalNaming{Prefix: prefix, Suffix: suffix, WildcardReplacement: wildcard}
		typed, legacy := n.TXTName(name, typ), n.LegacyTXTName(name)
		if _, rest, ok := strings.Cut(name, "."); ok && rest != "" {
			for _, got := range []string{typed, legacy} {
				if !strings.HasSuffix(got, "."+rest) {
					t.Fatalf("naming %+v of %q gives %q, not below %q", n, name, got, rest)
				}
			}
		}
		if zero := (ExternalNaming{}); name != "" && dnswire.Dotless(name) == name && (zero.TXTName(name, typ) != strings.ToLower(typ)+"-"+name || zero.LegacyTXTName(name) != name) {
			t.Fatalf("zero naming of %q %s = %q, %q", name, typ, zero.TXTName(name, typ), zero.LegacyTXTName(name))
		}
		if name == "" || typed == "" || IsRegistryName(typed) || dnswire.Dotless(typed) != typed || !isTypeMnemonic(strings.ToUpper(typ)) {
			return
		}
		claim := "heritage=external-dns,external-dns/owner=other"
		key := provider.RecordSetKey{Name: name, Type: strings.ToUpper(typ)}
		ix := NewIndex("test", []provider.RecordSet{{Name: typed, Type: "TXT", TTL: 300, Targets: []string{claim}}})
		found := false
		for _, r := range ix.ExternalFor(key, n) {
			if !r.Legacy && r.Set.Name == typed && len(r.Claims) == 1 && r.Claims[0].Owner == "other" {
				found = true
			}
		}
		if !found {
			t.Fatalf("ExternalFor(%+v, %+v) misses the claim at %q: %+v", key, n, typed, ix.ExternalFor(key, n))
		}
	})
}

// FuzzNewIndex pins that NewIndex never panics on any TXT sets (registry names or not, values
// anything) and that what it keeps is consistent: every entry it holds re-encodes to a value
// Parse reads back as the same entry, and every key it lists has entries or a malformed record.
// A second entry built from the same bytes, with a valid name (provider.ValidateName: the
// plan validates every desired name) in a valid zone, is always found: one contributor's garbage
// never hides another's claim. (Parse accepts any canonical name, ".0" too; NewIndex then
// holds such an entry malformed, as foreign, which is safe.)
func FuzzNewIndex(f *testing.F) {
	good := sampleEntry()
	f.Add("example.test", RecordSet("example.test", good).Name, good.Encode(), "www.example.test", "c2", "x.example.test")
	f.Add("example.test", "dp-a-abc-www.example.test", "heritage=dnsplane&v=1", "*.example.test", "c1", "*.example.test")
	f.Add("example.test", "a-www.example.test", "heritage=external-dns,external-dns/owner=o", "example.test", "", "example.test")
	f.Add("", "", "", "", "", "")
	f.Fuzz(func(t *testing.T, zone, name, value, otherName, owner, entryName string) {
		sets := []provider.RecordSet{
			{Name: name, Type: "TXT", Targets: []string{value}},
			{Name: name, Type: "TXT", Targets: []string{value, value}},
			{Name: otherName, Type: "TXT", Targets: []string{value}},
			{Name: otherName, Type: "A", Targets: []string{value}},
		}
		e := Entry{OwnerID: owner, Resource: "DNSEndpoint/ns/app", Name: entryName, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
		valid := false
		_, nameErr := provider.ValidateName(e.Name)
		_, zoneErr := provider.ValidateName(zone)
		if p, err := Parse(e.Encode()); err == nil && p.Equal(e) && nameErr == nil && zoneErr == nil &&
			dnswire.IsSubdomain(e.Name, dnswire.Dotless(zone)) && !IsRegistryName(e.Name) {
			valid = true
			sets = append(sets, RecordSet(zone, e))
		}
		ix := NewIndex(zone, sets)
		for _, k := range ix.Keys() {
			entries := ix.Entries(k)
			if _, bad := ix.Malformed(k); len(entries) == 0 && !bad {
				t.Fatalf("key %+v listed with no entry and no malformed record", k)
			}
			for _, got := range entries {
				again, err := Parse(got.Encode())
				if err != nil || !again.Equal(got) {
					t.Fatalf("indexed entry %+v does not round-trip: %+v, %v", got, again, err)
				}
			}
		}
		ix.MalformedRecords()
		if !valid {
			return
		}
		for _, got := range ix.Of(e.Contributor()) {
			if got.Equal(e) {
				return
			}
		}
		t.Fatalf("NewIndex(%q) lost the valid entry %+v among %+v", zone, e, sets)
	})
}
