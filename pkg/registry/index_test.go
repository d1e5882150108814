package registry

import (
	"slices"
	"strings"
	"testing"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

const zone = "example.test"

func entry(owner, resource, name, typ string, targets ...string) Entry {
	return Entry{OwnerID: owner, Resource: resource, Name: name, Type: typ, TTL: 300, Targets: targets}
}

func txt(name string, values ...string) provider.RecordSet {
	return provider.RecordSet{Name: name, Type: "TXT", TTL: 300, Targets: values}
}

func TestNewIndex_GroupsEntriesByKeyAndContributor(t *testing.T) {
	a := entry("c1", "DNSRecord/ns/app", "app.example.test", "A", "192.0.2.1")
	b := entry("c2", "DNSRecord/ns/app", "app.example.test", "A", "192.0.2.2")
	other := entry("c1", "DNSRecord/ns/app", "api.example.test", "A", "192.0.2.9")
	sets := []provider.RecordSet{
		{Name: "app.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1", "192.0.2.2"}},
		RecordSet(zone, b), RecordSet(zone, other), RecordSet(zone, a),
		txt("app.example.test", "v=spf1 -all"),
	}
	ix := NewIndex("Example.Test.", sets)
	got := ix.Entries(a.Key())
	if len(got) != 2 || !got[0].Equal(a) || !got[1].Equal(b) {
		t.Errorf("Entries(%s) = %+v, want [a b] sorted by owner", a.Key(), got)
	}
	if of := ix.Of(a.Contributor()); len(of) != 2 || of[0].Name != "api.example.test" || of[1].Name != "app.example.test" {
		t.Errorf("Of(c1) = %+v, want api then app", of)
	}
	recs := ix.Records(b.Contributor(), b.Key())
	if len(recs) != 1 || !recs[0].Set.Equal(RecordSet(zone, b)) {
		t.Errorf("Records(c2) = %+v, want the exact registry set", recs)
	}
	if keys := ix.Keys(); !slices.Equal(keys, []provider.RecordSetKey{other.Key(), a.Key()}) {
		t.Errorf("Keys() = %v", keys)
	}
	if _, bad := ix.Malformed(a.Key()); bad || len(ix.MalformedRecords()) != 0 {
		t.Errorf("unexpected malformed records: %v", ix.MalformedRecords())
	}
	if ix.Zone() != zone {
		t.Errorf("Zone() = %q", ix.Zone())
	}
}

func TestNewIndex_MalformedRecordsAreKeptWithReason(t *testing.T) {
	good := entry("c1", "DNSEndpoint/ns/www", "www.example.test", "A", "192.0.2.1")
	goodSet := RecordSet(zone, good)
	v2 := strings.Replace(good.Encode(), "v=1", "v=2", 1)
	copied := entry("c2", "DNSEndpoint/ns/www", "www.example.test", "A", "192.0.2.1")
	outside := entry("c1", "DNSEndpoint/ns/www", "www.other.test", "A", "192.0.2.1")
	regName := entry("c1", "DNSEndpoint/ns/www", goodSet.Name, "A", "192.0.2.1")
	for _, tc := range []struct {
		name   string
		set    provider.RecordSet
		key    provider.RecordSetKey
		reason string
	}{
		{"unknown version", txt(goodSet.Name, v2), good.Key(), `unknown version "2"`},
		{"foreign value at a registry name", txt(goodSet.Name, "hello"), good.Key(), "not a dnsplane registry value"},
		{"two values", txt(goodSet.Name, good.Encode(), good.Encode()), good.Key(), "2 values, want 1"},
		{"no value", txt(goodSet.Name), good.Key(), "0 values, want 1"},
		{"value copied to another contributor's name", txt(goodSet.Name, copied.Encode()), good.Key(), "does not match its value"},
		{"name outside the zone", txt(Name(zone, outside.Contributor(), provider.RecordSetKey{Name: "x.example.test", Type: "A"}), outside.Encode()),
			outside.Key(), "outside zone"},
		{"claims a registry name", txt(Name(zone, regName.Contributor(), regName.Key()), regName.Encode()), regName.Key(), "itself a registry name"},
		{"bad ttl", txt(goodSet.Name, strings.Replace(good.Encode(), "ttl=300", "ttl=x", 1)), good.Key(), `bad ttl "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := NewIndex(zone, []provider.RecordSet{tc.set})
			reason, bad := ix.Malformed(tc.key)
			if !bad || !strings.Contains(reason, tc.reason) || !strings.Contains(reason, tc.set.Name) {
				t.Errorf("Malformed(%s) = %q, %v; want a reason naming %s and mentioning %q", tc.key, reason, bad, tc.set.Name, tc.reason)
			}
			if es := ix.Entries(tc.key); len(es) != 0 {
				t.Errorf("a malformed record gave entries %+v", es)
			}
			if len(ix.MalformedRecords()) != 1 {
				t.Errorf("MalformedRecords() = %v, want one", ix.MalformedRecords())
			}
		})
	}
}

func TestNewIndex_MalformedWithUnknownSetStandsForEverySet(t *testing.T) {
	e := entry("c1", "DNSEndpoint/ns/www", "www.example.test", "A", "192.0.2.1")
	e.SetIdentifier = "eu"
	ix := NewIndex(zone, []provider.RecordSet{txt(RecordSet(zone, e).Name, "garbage")})
	for _, set := range []string{"", "eu", "us"} {
		if _, bad := ix.Malformed(provider.RecordSetKey{Name: e.Name, Type: "A", SetIdentifier: set}); !bad {
			t.Errorf("set %q: not reported malformed", set)
		}
	}
	if _, bad := ix.Malformed(provider.RecordSetKey{Name: e.Name, Type: "AAAA"}); bad {
		t.Error("another type reported malformed")
	}
	// With a readable set identifier, only that set is affected.
	v := strings.Replace(e.Encode(), "v=1", "v=9", 1)
	ix = NewIndex(zone, []provider.RecordSet{txt(RecordSet(zone, e).Name, v)})
	if _, bad := ix.Malformed(provider.RecordSetKey{Name: e.Name, Type: "A", SetIdentifier: "us"}); bad {
		t.Error("a malformed record with a readable set identifier affected another set")
	}
	if _, bad := ix.Malformed(e.Key()); !bad {
		t.Error("its own set is not reported malformed")
	}
}

func TestNewIndex_AcceptsHoistedRecords(t *testing.T) {
	glue := entry("c1", "DNSRecord/ns/edge", "ns-eu.gslb.example.test", "A", "192.0.2.1")
	hoisted := RecordSet(zone, glue, "gslb.example.test")
	plain := RecordSet(zone, glue)
	if hoisted.Name == plain.Name {
		t.Fatal("hoisting did not change the name")
	}
	ix := NewIndex(zone, []provider.RecordSet{hoisted, plain})
	if recs := ix.Records(glue.Contributor(), glue.Key()); len(recs) != 2 {
		t.Errorf("Records = %+v, want both locations", recs)
	}
	if _, bad := ix.Malformed(glue.Key()); bad {
		t.Error("a hoisted record was reported malformed")
	}
}

func TestNewIndex_DetectsExternalDNSOwners(t *testing.T) {
	ix := NewIndex(zone, []provider.RecordSet{
		txt("a-www.example.test", "heritage=external-dns,external-dns/owner=ext1,external-dns/resource=ingress/default/www"),
		txt("cname-api.example.test", `"heritage=external-dns,external-dns/owner=ext2"`),
		txt("old.example.test", "heritage=external-dns,external-dns/owner=ext3,external-dns/resource=service/default/old"),
		txt("spf.example.test", "v=spf1 -all"),
	})
	for _, tc := range []struct {
		key   provider.RecordSetKey
		owner string
		ok    bool
	}{
		{provider.RecordSetKey{Name: "www.example.test", Type: "A"}, "ext1", true},
		{provider.RecordSetKey{Name: "www.example.test", Type: "AAAA"}, "", false},
		{provider.RecordSetKey{Name: "api.example.test", Type: "CNAME"}, "ext2", true},
		{provider.RecordSetKey{Name: "old.example.test", Type: "A"}, "ext3", true},
		{provider.RecordSetKey{Name: "old.example.test", Type: "TXT"}, "ext3", true},
		{provider.RecordSetKey{Name: "a-www.example.test", Type: "TXT"}, "ext1", true},
		{provider.RecordSetKey{Name: "spf.example.test", Type: "TXT"}, "", false},
	} {
		c, ok := ix.ExternalDNS(tc.key)
		if ok != tc.ok || c.Owner != tc.owner {
			t.Errorf("ExternalDNS(%s) = %+v, %v; want owner %q, %v", tc.key, c, ok, tc.owner, tc.ok)
		}
	}
	c, _ := ix.ExternalDNS(provider.RecordSetKey{Name: "www.example.test", Type: "A"})
	if got := c.String(); got != "owner ext1 (resource ingress/default/www)" {
		t.Errorf("String() = %q", got)
	}
}

func TestIndex_ReturnsCopies(t *testing.T) {
	e := entry("c1", "DNSEndpoint/ns/www", "www.example.test", "A", "192.0.2.1")
	ix := NewIndex(zone, []provider.RecordSet{RecordSet(zone, e)})
	ix.Entries(e.Key())[0].Targets[0] = "x"
	ix.Of(e.Contributor())[0].Targets[0] = "x"
	ix.Records(e.Contributor(), e.Key())[0].Set.Targets[0] = "x"
	if got := ix.Entries(e.Key())[0]; !got.Equal(e) {
		t.Errorf("index mutated through a result: %+v", got)
	}
	if got := ix.Records(e.Contributor(), e.Key())[0].Set; !got.Equal(RecordSet(zone, e)) {
		t.Errorf("index mutated through a result: %v", got)
	}
}

func TestIndex_ContributorsOfAnOwnerAndKind(t *testing.T) {
	sets := []provider.RecordSet{
		RecordSet(zone, entry("c1", "DNSEndpoint/ns/b", "b.example.test", "A", "192.0.2.2")),
		RecordSet(zone, entry("c1", "DNSEndpoint/ns/a", "a.example.test", "A", "192.0.2.1")),
		RecordSet(zone, entry("c1", "DNSEndpoint/ns/a", "a.example.test", "TXT", "x")),
		RecordSet(zone, entry("c1", "DNSRecord/ns/a", "r.example.test", "A", "192.0.2.3")),
		RecordSet(zone, entry("c2", "DNSEndpoint/ns/c", "c.example.test", "A", "192.0.2.4")),
		txt("_dnsplane-bad.example.test", "not a registry value"),
	}
	ix := NewIndex(zone, sets)
	want := []Contributor{{OwnerID: "c1", Resource: "DNSEndpoint/ns/a"}, {OwnerID: "c1", Resource: "DNSEndpoint/ns/b"}}
	if got := ix.Contributors("c1", "DNSEndpoint"); !slices.Equal(got, want) {
		t.Errorf("Contributors(c1, DNSEndpoint) = %v, want %v", got, want)
	}
	if got := ix.Contributors("c1", "DNSRecord"); len(got) != 1 || got[0].Resource != "DNSRecord/ns/a" {
		t.Errorf("Contributors(c1, DNSRecord) = %v", got)
	}
	if ns, name, ok := want[0].Object(); !ok || ns != "ns" || name != "a" {
		t.Errorf("Object() = %q, %q, %v; want ns, a", ns, name, ok)
	}
	if _, _, ok := (Contributor{OwnerID: "c1", Resource: "not-a-resource"}).Object(); ok {
		t.Error("Object() of a malformed resource is ok")
	}
	if got := ix.Contributors("c3", "DNSEndpoint"); len(got) != 0 {
		t.Errorf("Contributors of an owner with no records = %v, want none", got)
	}
}
