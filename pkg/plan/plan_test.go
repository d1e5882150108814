package plan

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

const zone = "example.test"

var (
	self     = registry.Contributor{OwnerID: "c1", Resource: "DNSEndpoint/team-a/www"}
	sibling  = registry.Contributor{OwnerID: "c1", Resource: "DNSEndpoint/team-b/www"} // same cluster, other object
	stranger = registry.Contributor{OwnerID: "c9", Resource: "DNSEndpoint/team-z/www"}
	rec      = registry.Contributor{OwnerID: "c1", Resource: "DNSRecord/team-a/app"}
	peer     = registry.Contributor{OwnerID: "c2", Resource: "DNSRecord/team-b/app"}
	peer2    = registry.Contributor{OwnerID: "c3", Resource: "DNSRecord/team-c/app"}
)

func set(name, typ string, ttl int64, targets ...string) provider.RecordSet {
	return provider.RecordSet{Name: name, Type: typ, TTL: ttl, Targets: targets}
}

func entryOf(c registry.Contributor, name, typ string, ttl int64, targets ...string) registry.Entry {
	return registry.Entry{OwnerID: c.OwnerID, Resource: c.Resource, Name: name, Type: typ, TTL: ttl, Targets: targets}
}

// claim is c's registry record for (name, typ) with the given TTL and
// targets.
func claim(c registry.Contributor, name, typ string, ttl int64, targets ...string) provider.RecordSet {
	return registry.RecordSet(zone, entryOf(c, name, typ, ttl, targets...))
}

func claimAt(at time.Time, c registry.Contributor, name, typ string, ttl int64, targets ...string) provider.RecordSet {
	return registry.RecordSet(zone, registry.WithHeartbeat(entryOf(c, name, typ, ttl, targets...), at))
}

func create(rs provider.RecordSet) provider.Change {
	return provider.Change{Action: provider.ActionCreate, After: &rs}
}

// written is what a plan writes for a set c alone desires: c's claim, then the set.
func written(c registry.Contributor, name, typ string, ttl int64, targets ...string) []provider.Change {
	return []provider.Change{create(claim(c, name, typ, ttl, targets...)), create(set(name, typ, ttl, targets...))}
}

// removed is what a plan writes for a set c alone held and no longer desires: the set deleted,
// then c's claim.
func removed(c registry.Contributor, name, typ string, ttl int64, targets ...string) []provider.Change {
	return []provider.Change{del(set(name, typ, ttl, targets...)), del(claim(c, name, typ, ttl, targets...))}
}

func update(before, after provider.RecordSet) provider.Change {
	return provider.Change{Action: provider.ActionUpdate, Before: &before, After: &after}
}

func del(rs provider.RecordSet) provider.Change {
	return provider.Change{Action: provider.ActionDelete, Before: &rs}
}

var (
	apexSOA = set(zone, "SOA", 3600, "ns1.example.test hostmaster.example.test 1 7200 3600 1209600 300")
	apexNS  = set(zone, "NS", 3600, "ns1.example.test")
	hb      = time.Unix(1_700_000_000, 0).UTC()
)

// planCase is one table case; every case also runs through the property
// tests (idempotence, determinism, exact Before, ...).
type planCase struct {
	name      string
	mode      Mode
	self      registry.Contributor // default: self (SingleOwner) or rec (Shared)
	desired   []provider.RecordSet
	current   []provider.RecordSet
	ttl       int64 // DefaultTTL
	want      []provider.Change
	conflicts map[string]string      // key string -> substring of the message
	kept      map[string]string      // key string -> substring of the message (Result.Kept)
	release   bool                   // Input.Release
	reasons   map[string]string      // key string -> Reason, when not OwnershipConflict
	policy    Policy                 // Input.Policy
	ext       ExternalDNS            // Input.ExternalDNS
	skipped   []provider.Change      // Result.Skipped
	caps      *provider.Capabilities // Input.Capabilities
}

func (tc planCase) input() Input {
	c := tc.self
	if c == (registry.Contributor{}) {
		c = self
		if tc.mode == Shared {
			c = rec
		}
	}
	return Input{Zone: zone, Self: c, Mode: tc.mode, Desired: tc.desired, Current: tc.current, DefaultTTL: tc.ttl, Release: tc.release,
		Policy: tc.policy, ExternalDNS: tc.ext, Capabilities: tc.caps}
}

var singleOwnerCases = []planCase{
	{
		name:    "free name: claim first, then create the set",
		desired: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1")},
		current: []provider.RecordSet{apexSOA, apexNS},
		want:    written(self, "www.example.test", "A", 300, "192.0.2.1"),
	},
	{
		name:    "already in sync: no changes",
		desired: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.2", "192.0.2.1")},
		current: []provider.RecordSet{
			set("www.example.test", "A", 300, "192.0.2.1", "192.0.2.2"),
			claim(self, "www.example.test", "A", 300, "192.0.2.1", "192.0.2.2"),
		},
	},
	{
		name:    "own set changed: update with the exact Before, and the claim",
		desired: []provider.RecordSet{set("www.example.test", "A", 60, "192.0.2.3")},
		current: []provider.RecordSet{
			set("www.example.test", "A", 300, "192.0.2.1"),
			claim(self, "www.example.test", "A", 300, "192.0.2.1"),
		},
		want: []provider.Change{
			update(claim(self, "www.example.test", "A", 300, "192.0.2.1"), claim(self, "www.example.test", "A", 60, "192.0.2.3")),
			update(set("www.example.test", "A", 300, "192.0.2.1"), set("www.example.test", "A", 60, "192.0.2.3")),
		},
	},
	{
		name: "no longer desired: delete the set, then release the claim",
		current: []provider.RecordSet{
			set("old.example.test", "A", 300, "192.0.2.1"),
			claim(self, "old.example.test", "A", 300, "192.0.2.1"),
		},
		want: removed(self, "old.example.test", "A", 300, "192.0.2.1"),
	},
	{
		name:    "own set lost: recreate it",
		desired: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1")},
		current: []provider.RecordSet{claim(self, "www.example.test", "A", 300, "192.0.2.1")},
		want:    []provider.Change{create(set("www.example.test", "A", 300, "192.0.2.1"))},
	},
	{
		name:    "desired TTL 0 takes the default",
		desired: []provider.RecordSet{set("www.example.test", "A", 0, "192.0.2.1")},
		ttl:     120,
		want:    written(self, "www.example.test", "A", 120, "192.0.2.1"),
	},
	{
		name: "duplicate desired keys merge",
		desired: []provider.RecordSet{
			set("www.example.test", "A", 300, "192.0.2.1"),
			set("www.example.test", "A", 60, "192.0.2.2", "192.0.2.1"),
		},
		want: written(self, "www.example.test", "A", 60, "192.0.2.1", "192.0.2.2"),
	},
	{
		name:    "wildcard and apex records get their own registry names",
		desired: []provider.RecordSet{set("*.example.test", "A", 300, "192.0.2.1"), set(zone, "MX", 300, "10 mail.example.test")},
		current: []provider.RecordSet{apexSOA, apexNS},
		want: []provider.Change{
			create(claim(self, "*.example.test", "A", 300, "192.0.2.1")),
			create(claim(self, zone, "MX", 300, "10 mail.example.test")),
			create(set("*.example.test", "A", 300, "192.0.2.1")),
			create(set(zone, "MX", 300, "10 mail.example.test")),
		},
	},
	{
		name:    "weight and provider options are part of the set",
		desired: []provider.RecordSet{{Name: "w.example.test", Type: "A", TTL: 60, SetIdentifier: "eu", Weight: ptr(int64(70)), Targets: []string{"192.0.2.1"}}},
		current: []provider.RecordSet{
			{Name: "w.example.test", Type: "A", TTL: 60, SetIdentifier: "eu", Weight: ptr(int64(30)), Targets: []string{"192.0.2.1"}},
			registry.RecordSet(zone, registry.Entry{OwnerID: "c1", Resource: self.Resource, Name: "w.example.test", Type: "A", SetIdentifier: "eu", TTL: 60, Targets: []string{"192.0.2.1"}}),
		},
		want: []provider.Change{update(
			provider.RecordSet{Name: "w.example.test", Type: "A", TTL: 60, SetIdentifier: "eu", Weight: ptr(int64(30)), Targets: []string{"192.0.2.1"}},
			provider.RecordSet{Name: "w.example.test", Type: "A", TTL: 60, SetIdentifier: "eu", Weight: ptr(int64(70)), Targets: []string{"192.0.2.1"}},
		)},
	},
	{
		name:    "desired set with no targets: claim only, existing set deleted",
		desired: []provider.RecordSet{set("www.example.test", "A", 300)},
		current: []provider.RecordSet{
			set("www.example.test", "A", 300, "192.0.2.1"),
			claim(self, "www.example.test", "A", 300, "192.0.2.1"),
		},
		want: []provider.Change{
			update(claim(self, "www.example.test", "A", 300, "192.0.2.1"), claim(self, "www.example.test", "A", 300)),
			del(set("www.example.test", "A", 300, "192.0.2.1")),
		},
	},
	{
		name:    "desired names are canonicalised",
		desired: []provider.RecordSet{set("WWW.Example.Test.", "a", 300, "192.0.2.1")},
		current: []provider.RecordSet{
			set("www.example.test", "A", 300, "192.0.2.1"),
			claim(self, "www.example.test", "A", 300, "192.0.2.1"),
			set("www.example.test", "TXT", 300, "v=spf1 -all"),
		},
	},
}

var foreignCases = []planCase{
	{
		name:      "existing set without registry record: conflict, nothing written",
		desired:   []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.9"), set("new.example.test", "A", 300, "192.0.2.1")},
		current:   []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1")},
		want:      written(self, "new.example.test", "A", 300, "192.0.2.1"),
		conflicts: map[string]string{"www.example.test/A": "held by another owner: no registry record"},
	},
	{
		name:    "external-dns' set: conflict naming its owner",
		desired: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.9"), set("api.example.test", "CNAME", 300, "lb.example.net")},
		current: []provider.RecordSet{
			set("www.example.test", "A", 300, "192.0.2.1"),
			set("a-www.example.test", "TXT", 300, `"heritage=external-dns,external-dns/owner=ext1,external-dns/resource=ingress/default/www"`),
			set("api.example.test", "CNAME", 300, "lb.example.org"),
			set("api.example.test", "TXT", 300, "heritage=external-dns,external-dns/owner=ext2"),
		},
		conflicts: map[string]string{
			"www.example.test/A":     "held by external-dns owner ext1 (resource ingress/default/www)",
			"api.example.test/CNAME": "held by external-dns owner ext2",
		},
	},
	{
		name:    "foreign sets we do not desire are never touched",
		current: []provider.RecordSet{apexSOA, apexNS, set("www.example.test", "A", 300, "192.0.2.1"), set("www.example.test", "TXT", 300, "v=spf1 -all")},
	},
	{
		name:    "malformed registry record: conflict with the reason, even for a missing set",
		desired: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1"), set("v2.example.test", "A", 300, "192.0.2.1")},
		current: []provider.RecordSet{
			set("www.example.test", "A", 300, "192.0.2.1"),
			set(claim(self, "www.example.test", "A", 300).Name, "TXT", 300, "heritage=dnsplane&v=1&owner=c1&resource=DNSEndpoint/team-a/www&name=www.example.test&type=A&ttl=soon"),
			set(claim(stranger, "v2.example.test", "A", 300).Name, "TXT", 300,
				strings.Replace(claim(stranger, "v2.example.test", "A", 300).Targets[0], "v=1", "v=2", 1)),
		},
		conflicts: map[string]string{
			"www.example.test/A": `registry record malformed: ` + claim(self, "www.example.test", "A", 300).Name + `: malformed dnsplane registry value: bad ttl "soon"`,
			"v2.example.test/A":  `unknown version "2"`,
		},
	},
	{
		name:      "malformed registry record blocks deleting a set we held",
		current:   []provider.RecordSet{set("old.example.test", "A", 300, "192.0.2.1"), claim(self, "old.example.test", "A", 300, "192.0.2.1"), set(claim(stranger, "old.example.test", "A", 1).Name, "TXT", 300, "junk")},
		conflicts: map[string]string{"old.example.test/A": "not a dnsplane registry value"},
	},
	{
		// The set may be the unreadable claimant's, so it stays (and is
		// reported as kept), but Self's own registry record goes.
		name:    "release: a malformed registry record beside a set we held: release our claim, keep the set",
		release: true,
		current: []provider.RecordSet{set("old.example.test", "A", 300, "192.0.2.1"), claim(self, "old.example.test", "A", 300, "192.0.2.1"), set(claim(stranger, "old.example.test", "A", 1).Name, "TXT", 300, "junk")},
		want:    []provider.Change{del(claim(self, "old.example.test", "A", 300, "192.0.2.1"))},
		kept:    map[string]string{"old.example.test/A": "not a dnsplane registry value"},
	},
	{
		name:    "release: a newer version's claim beside a set we held: release our claim, keep the set",
		release: true,
		current: []provider.RecordSet{set("api.example.test", "A", 300, "192.0.2.1"), claim(self, "api.example.test", "A", 300, "192.0.2.1"),
			set(claim(stranger, "api.example.test", "A", 300).Name, "TXT", 300, strings.Replace(claim(stranger, "api.example.test", "A", 300).Targets[0], "v=1", "v=2", 1))},
		want: []provider.Change{del(claim(self, "api.example.test", "A", 300, "192.0.2.1"))},
		kept: map[string]string{"api.example.test/A": `unknown version "2"`},
	},
	{
		name:    "release, shared: a malformed record beside a set we held: release our claim, keep the set",
		mode:    Shared,
		release: true,
		current: []provider.RecordSet{set("app.example.test", "A", 300, "192.0.2.1"), claim(rec, "app.example.test", "A", 300, "192.0.2.1"), set(claim(peer, "app.example.test", "A", 1).Name, "TXT", 300, "junk")},
		want:    []provider.Change{del(claim(rec, "app.example.test", "A", 300, "192.0.2.1"))},
		kept:    map[string]string{"app.example.test/A": "not a dnsplane registry value"},
	},
	{
		name:      "another contributor of the same cluster holds the name: conflict naming it",
		desired:   []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.9")},
		current:   []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1"), claim(sibling, "www.example.test", "A", 300, "192.0.2.1")},
		conflicts: map[string]string{"www.example.test/A": "held by another owner: owner c1 resource DNSEndpoint/team-b/www"},
	},
	{
		name:      "another cluster claimed a name whose set does not exist yet: conflict",
		desired:   []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.9")},
		current:   []provider.RecordSet{claim(stranger, "www.example.test", "A", 300, "192.0.2.1")},
		conflicts: map[string]string{"www.example.test/A": "owner c9 resource DNSEndpoint/team-z/www"},
	},
	{
		name:      "a DNSRecord's shared name is not a DNSEndpoint's to take",
		desired:   []provider.RecordSet{set("app.example.test", "A", 300, "192.0.2.9")},
		current:   []provider.RecordSet{set("app.example.test", "A", 300, "192.0.2.1"), claim(peer, "app.example.test", "A", 300, "192.0.2.1")},
		conflicts: map[string]string{"app.example.test/A": "resource DNSRecord/team-b/app"},
	},
	{
		name: "both held (after a race): leaving releases only our claim, the set stays",
		current: []provider.RecordSet{
			set("www.example.test", "A", 300, "192.0.2.1"),
			claim(self, "www.example.test", "A", 300, "192.0.2.9"),
			claim(sibling, "www.example.test", "A", 300, "192.0.2.1"),
		},
		want: []provider.Change{del(claim(self, "www.example.test", "A", 300, "192.0.2.9"))},
	},
	{
		name:    "desired names outside the zone or at registry names are invalid endpoints",
		desired: []provider.RecordSet{set("www.other.test", "A", 300, "192.0.2.1"), set(claim(self, "x.example.test", "A", 1).Name, "TXT", 300, "x")},
		conflicts: map[string]string{
			"www.other.test/A": "outside zone example.test",
			claim(self, "x.example.test", "A", 1).Name + "/TXT": "reserved for dnsplane registry records",
		},
		reasons: map[string]string{
			"www.other.test/A": ReasonInvalidEndpoint,
			claim(self, "x.example.test", "A", 1).Name + "/TXT": ReasonInvalidEndpoint,
		},
	},
	{
		name:    "our registry name taken by a record that is not ours: conflict",
		desired: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1")},
		current: []provider.RecordSet{{Name: claim(self, "www.example.test", "A", 1).Name, Type: "TXT", TTL: 300, SetIdentifier: "", Targets: []string{
			registry.RecordSet(zone, entryOf(self, "other.example.test", "A", 300, "192.0.2.1")).Targets[0]}}},
		conflicts: map[string]string{"www.example.test/A": "registry name dp-a-ubyficdjd4-www.example.test is taken by a record that is not ours"},
	},
	{
		name:      "invalid self: nothing is written",
		self:      registry.Contributor{OwnerID: "c1", Resource: "www"},
		desired:   []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1")},
		conflicts: map[string]string{"www.example.test/A": "invalid contributor"},
	},
}

var sharedCases = []planCase{
	{
		name:    "first contributor creates the set",
		mode:    Shared,
		desired: []provider.RecordSet{set("app.example.test", "A", 60, "192.0.2.1")},
		want:    written(rec, "app.example.test", "A", 60, "192.0.2.1"),
	},
	{
		name:    "joining merges targets and takes the smallest TTL",
		mode:    Shared,
		desired: []provider.RecordSet{set("app.example.test", "A", 300, "192.0.2.1")},
		current: []provider.RecordSet{
			set("app.example.test", "A", 60, "192.0.2.2"),
			claim(peer, "app.example.test", "A", 60, "192.0.2.2"),
		},
		want: []provider.Change{
			create(claim(rec, "app.example.test", "A", 300, "192.0.2.1")),
			update(set("app.example.test", "A", 60, "192.0.2.2"), set("app.example.test", "A", 60, "192.0.2.1", "192.0.2.2")),
		},
	},
	{
		name:    "changing targets replaces only ours",
		mode:    Shared,
		desired: []provider.RecordSet{set("app.example.test", "A", 60, "192.0.2.3")},
		current: []provider.RecordSet{
			set("app.example.test", "A", 60, "192.0.2.1", "192.0.2.2", "192.0.2.4"),
			claim(rec, "app.example.test", "A", 60, "192.0.2.1"),
			claim(peer, "app.example.test", "A", 60, "192.0.2.2"),
			claim(peer2, "app.example.test", "A", 60, "192.0.2.4", "192.0.2.2"),
		},
		want: []provider.Change{
			update(claim(rec, "app.example.test", "A", 60, "192.0.2.1"), claim(rec, "app.example.test", "A", 60, "192.0.2.3")),
			update(set("app.example.test", "A", 60, "192.0.2.1", "192.0.2.2", "192.0.2.4"), set("app.example.test", "A", 60, "192.0.2.2", "192.0.2.3", "192.0.2.4")),
		},
	},
	{
		name: "leaving rewrites the set without our targets",
		mode: Shared,
		current: []provider.RecordSet{
			set("app.example.test", "A", 30, "192.0.2.1", "192.0.2.2"),
			claim(rec, "app.example.test", "A", 30, "192.0.2.1"),
			claim(peer, "app.example.test", "A", 60, "192.0.2.2"),
		},
		want: []provider.Change{
			update(set("app.example.test", "A", 30, "192.0.2.1", "192.0.2.2"), set("app.example.test", "A", 60, "192.0.2.2")),
			del(claim(rec, "app.example.test", "A", 30, "192.0.2.1")),
		},
	},
	{
		name: "the last contributor to leave deletes the set",
		mode: Shared,
		current: []provider.RecordSet{
			set("app.example.test", "A", 30, "192.0.2.1"),
			claim(rec, "app.example.test", "A", 30, "192.0.2.1"),
		},
		want: removed(rec, "app.example.test", "A", 30, "192.0.2.1"),
	},
	{
		name:    "targets lost by a concurrent write are restored from the registry",
		mode:    Shared,
		desired: []provider.RecordSet{set("app.example.test", "A", 60, "192.0.2.1")},
		current: []provider.RecordSet{
			set("app.example.test", "A", 60, "192.0.2.2"),
			claim(rec, "app.example.test", "A", 60, "192.0.2.1"),
			claim(peer, "app.example.test", "A", 60, "192.0.2.2"),
		},
		want: []provider.Change{
			update(set("app.example.test", "A", 60, "192.0.2.2"), set("app.example.test", "A", 60, "192.0.2.1", "192.0.2.2")),
		},
	},
	{
		name:    "a peer's claim without its set: the set is created with the union",
		mode:    Shared,
		desired: []provider.RecordSet{set("app.example.test", "A", 60, "192.0.2.1")},
		current: []provider.RecordSet{claim(peer, "app.example.test", "A", 60, "192.0.2.2")},
		want: []provider.Change{
			create(claim(rec, "app.example.test", "A", 60, "192.0.2.1")),
			create(set("app.example.test", "A", 60, "192.0.2.1", "192.0.2.2")),
		},
	},
	{
		name:      "a DNSEndpoint's name is not shared",
		mode:      Shared,
		desired:   []provider.RecordSet{set("www.example.test", "A", 60, "192.0.2.1")},
		current:   []provider.RecordSet{set("www.example.test", "A", 60, "192.0.2.2"), claim(self, "www.example.test", "A", 60, "192.0.2.2")},
		conflicts: map[string]string{"www.example.test/A": "owner c1 resource DNSEndpoint/team-a/www"},
	},
	{
		name:      "shared sets are still never taken from a foreign owner",
		mode:      Shared,
		desired:   []provider.RecordSet{set("app.example.test", "A", 60, "192.0.2.1")},
		current:   []provider.RecordSet{set("app.example.test", "A", 60, "192.0.2.2")},
		conflicts: map[string]string{"app.example.test/A": "no registry record"},
	},
	{
		name:    "NS at the apex of a delegated Gslb zone merges across clusters",
		mode:    Shared,
		desired: []provider.RecordSet{set("gslb.example.test", "NS", 300, "ns-eu.gslb.example.test"), set("ns-eu.gslb.example.test", "A", 300, "192.0.2.1")},
		current: []provider.RecordSet{
			set("gslb.example.test", "NS", 300, "ns-us.gslb.example.test"),
			claim(peer, "gslb.example.test", "NS", 300, "ns-us.gslb.example.test"),
		},
		want: []provider.Change{
			create(claim(rec, "gslb.example.test", "NS", 300, "ns-eu.gslb.example.test")),
			create(registry.RecordSet(zone, entryOf(rec, "ns-eu.gslb.example.test", "A", 300, "192.0.2.1"), "gslb.example.test")),
			update(set("gslb.example.test", "NS", 300, "ns-us.gslb.example.test"), set("gslb.example.test", "NS", 300, "ns-eu.gslb.example.test", "ns-us.gslb.example.test")),
			create(set("ns-eu.gslb.example.test", "A", 300, "192.0.2.1")),
		},
	},
	{
		name:    "two DNSRecords of one cluster merge like two clusters",
		mode:    Shared,
		desired: []provider.RecordSet{set("app.example.test", "A", 60, "192.0.2.1")},
		current: []provider.RecordSet{
			set("app.example.test", "A", 60, "192.0.2.5"),
			claim(registry.Contributor{OwnerID: "c1", Resource: "DNSRecord/team-x/app"}, "app.example.test", "A", 60, "192.0.2.5"),
		},
		want: []provider.Change{
			create(claim(rec, "app.example.test", "A", 60, "192.0.2.1")),
			update(set("app.example.test", "A", 60, "192.0.2.5"), set("app.example.test", "A", 60, "192.0.2.1", "192.0.2.5")),
		},
	},
	{
		name: "leaving a set a DNSEndpoint also claims (after a race) only releases our claim",
		mode: Shared,
		current: []provider.RecordSet{
			set("app.example.test", "A", 60, "192.0.2.1"),
			claim(rec, "app.example.test", "A", 60, "192.0.2.1"),
			claim(self, "app.example.test", "A", 60, "192.0.2.1"),
		},
		want: []provider.Change{del(claim(rec, "app.example.test", "A", 60, "192.0.2.1"))},
	},
}

var cnameCases = []planCase{
	{
		name:      "CNAME wanted where a foreign A exists",
		desired:   []provider.RecordSet{set("www.example.test", "CNAME", 300, "lb.example.net")},
		current:   []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1")},
		conflicts: map[string]string{"www.example.test/CNAME": "CNAME cannot coexist with other data at www.example.test (RFC 1034 §3.6.2): www.example.test/A exists"},
	},
	{
		name:      "A wanted where a CNAME exists",
		mode:      Shared,
		desired:   []provider.RecordSet{set("app.example.test", "A", 300, "192.0.2.1")},
		current:   []provider.RecordSet{set("app.example.test", "CNAME", 300, "lb.example.net"), claim(peer, "app.example.test", "CNAME", 300, "lb.example.net")},
		conflicts: map[string]string{"app.example.test/A": "app.example.test/CNAME exists"},
	},
	{
		name:      "CNAME wanted where another contributor claims an A whose set is gone",
		mode:      Shared,
		desired:   []provider.RecordSet{set("app.example.test", "CNAME", 300, "lb.example.net")},
		current:   []provider.RecordSet{claim(peer, "app.example.test", "A", 300, "192.0.2.1")},
		conflicts: map[string]string{"app.example.test/CNAME": "app.example.test/A is claimed by owner c2 resource DNSRecord/team-b/app"},
	},
	{
		name:    "CNAME and A both wanted at one name",
		desired: []provider.RecordSet{set("www.example.test", "CNAME", 300, "lb.example.net"), set("www.example.test", "A", 300, "192.0.2.1")},
		conflicts: map[string]string{
			"www.example.test/CNAME": "www.example.test/A is wanted too",
			"www.example.test/A":     "www.example.test/CNAME is wanted too",
		},
	},
	{
		name:      "CNAME at the apex clashes with SOA and NS",
		desired:   []provider.RecordSet{set(zone, "CNAME", 300, "lb.example.net")},
		current:   []provider.RecordSet{apexSOA, apexNS},
		conflicts: map[string]string{zone + "/CNAME": "example.test/NS exists, example.test/SOA exists"},
	},
	{
		name:    "our own A is replaced by a CNAME: delete before create",
		desired: []provider.RecordSet{set("www.example.test", "CNAME", 300, "lb.example.net")},
		current: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1"), claim(self, "www.example.test", "A", 300, "192.0.2.1")},
		want: []provider.Change{
			create(claim(self, "www.example.test", "CNAME", 300, "lb.example.net")),
			del(set("www.example.test", "A", 300, "192.0.2.1")),
			create(set("www.example.test", "CNAME", 300, "lb.example.net")),
			del(claim(self, "www.example.test", "A", 300, "192.0.2.1")),
		},
	},
	{
		name:    "our A that we cannot delete (malformed registry) keeps the CNAME out",
		desired: []provider.RecordSet{set("www.example.test", "CNAME", 300, "lb.example.net")},
		current: []provider.RecordSet{
			set("www.example.test", "A", 300, "192.0.2.1"), claim(self, "www.example.test", "A", 300, "192.0.2.1"),
			set(claim(stranger, "www.example.test", "A", 1).Name, "TXT", 300, "junk"),
		},
		conflicts: map[string]string{
			"www.example.test/A":     "registry record malformed",
			"www.example.test/CNAME": "www.example.test/A exists",
		},
	},
	{
		// The t5/t5txt case: an A replaced by a CNAME where another object's TXT sits at the
		// name. The CNAME is refused, so the A and its claim stay (external-dns #6683's shape).
		name:    "our A replaced by a CNAME that another owner's TXT blocks: the A and its claim stay, both say why",
		desired: []provider.RecordSet{set("tr5.example.test", "CNAME", 300, "lb.example.net")},
		current: []provider.RecordSet{
			set("tr5.example.test", "A", 300, "192.0.2.5"), claim(self, "tr5.example.test", "A", 300, "192.0.2.5"),
			set("tr5.example.test", "TXT", 300, `"v=spf1 -all"`), claim(sibling, "tr5.example.test", "TXT", 300, `"v=spf1 -all"`),
		},
		conflicts: map[string]string{
			"tr5.example.test/CNAME": "tr5.example.test/TXT exists",
			"tr5.example.test/A":     "tr5.example.test/A is kept as it is: its replacement at tr5.example.test (tr5.example.test/CNAME) is not written",
		},
	},
	{
		name:    "shared: our A replaced by a CNAME that a peer's A blocks: our targets stay",
		mode:    Shared,
		desired: []provider.RecordSet{set("app.example.test", "CNAME", 300, "lb.example.net")},
		current: []provider.RecordSet{
			set("app.example.test", "A", 60, "192.0.2.1", "192.0.2.2"),
			claim(rec, "app.example.test", "A", 60, "192.0.2.1"), claim(peer, "app.example.test", "A", 60, "192.0.2.2"),
		},
		conflicts: map[string]string{
			"app.example.test/CNAME": "app.example.test/A is claimed by owner c2",
			"app.example.test/A":     "is kept as it is",
		},
	},
	{
		name:    "a blocked replacement holds back only its own name: another name's delete goes ahead",
		desired: []provider.RecordSet{set("tr5.example.test", "CNAME", 300, "lb.example.net")},
		current: []provider.RecordSet{
			set("tr5.example.test", "A", 300, "192.0.2.5"), claim(self, "tr5.example.test", "A", 300, "192.0.2.5"),
			set("tr5.example.test", "TXT", 300, `"x"`), claim(sibling, "tr5.example.test", "TXT", 300, `"x"`),
			set("old.example.test", "A", 300, "192.0.2.6"), claim(self, "old.example.test", "A", 300, "192.0.2.6"),
		},
		want: removed(self, "old.example.test", "A", 300, "192.0.2.6"),
		conflicts: map[string]string{
			"tr5.example.test/CNAME": "tr5.example.test/TXT exists",
			"tr5.example.test/A":     "is kept as it is",
		},
	},
	{
		name:    "a CNAME beside unrelated names is fine",
		desired: []provider.RecordSet{set("www.example.test", "CNAME", 300, "lb.example.net")},
		current: []provider.RecordSet{set("example.test", "A", 300, "192.0.2.1"), set("x.www.example.test", "A", 300, "192.0.2.1")},
		want:    written(self, "www.example.test", "CNAME", 300, "lb.example.net"),
	},
}

var noWeightedRouting = &provider.Capabilities{WeightedRouting: false}

// notCapableCases: a set identifier on a provider without weighted routing is refused alone.
var notCapableCases = []planCase{
	{
		name: "a set identifier without weighted routing: that endpoint is NotCapable, the others are written",
		caps: noWeightedRouting,
		desired: []provider.RecordSet{
			{Name: "w.example.test", Type: "A", TTL: 300, SetIdentifier: "eu", Weight: ptr(int64(10)), Targets: []string{"192.0.2.1"}},
			set("www.example.test", "A", 300, "192.0.2.2"),
		},
		want:      written(self, "www.example.test", "A", 300, "192.0.2.2"),
		conflicts: map[string]string{"w.example.test/A/eu": "no weighted routing"},
		reasons:   map[string]string{"w.example.test/A/eu": ReasonNotCapable},
	},
	{
		name: "a plain set made weighted without weighted routing: the plain set stays",
		caps: noWeightedRouting,
		desired: []provider.RecordSet{
			{Name: "w.example.test", Type: "A", TTL: 300, SetIdentifier: "eu", Targets: []string{"192.0.2.1"}},
		},
		current: []provider.RecordSet{set("w.example.test", "A", 300, "192.0.2.1"), claim(self, "w.example.test", "A", 300, "192.0.2.1")},
		conflicts: map[string]string{
			"w.example.test/A/eu": "no weighted routing",
			"w.example.test/A":    "its replacement at w.example.test (w.example.test/A/eu) is not written",
		},
		reasons: map[string]string{"w.example.test/A/eu": ReasonNotCapable, "w.example.test/A": ReasonNotCapable},
	},
	{
		name: "a geo set on a provider with weighted but no geo routing: NotCapable, the others are written",
		caps: &provider.Capabilities{WeightedRouting: true},
		desired: []provider.RecordSet{
			{Name: "g.example.test", Type: "A", TTL: 30, SetIdentifier: "eu", Targets: []string{"192.0.2.1"},
				ProviderSpecific: map[string]string{"dnsplane.io/geo-tag": "eu", "dnsplane.io/geo-default": "true"}},
			set("www.example.test", "A", 300, "192.0.2.2"),
		},
		want:      written(self, "www.example.test", "A", 300, "192.0.2.2"),
		conflicts: map[string]string{"g.example.test/A/eu": "no geo routing"},
		reasons:   map[string]string{"g.example.test/A/eu": ReasonNotCapable},
	},
	{
		name: "weighted routing: set identifiers are written",
		caps: &provider.Capabilities{WeightedRouting: true},
		desired: []provider.RecordSet{
			{Name: "w.example.test", Type: "A", TTL: 300, SetIdentifier: "eu", Targets: []string{"192.0.2.1"}},
		},
		want: []provider.Change{
			create(registry.RecordSet(zone, registry.Entry{OwnerID: self.OwnerID, Resource: self.Resource, Name: "w.example.test", Type: "A", SetIdentifier: "eu", TTL: 300, Targets: []string{"192.0.2.1"}})),
			create(provider.RecordSet{Name: "w.example.test", Type: "A", TTL: 300, SetIdentifier: "eu", Targets: []string{"192.0.2.1"}}),
		},
	},
}

func TestPlan_RefusesWhatTheProviderCannotHoldAlone(t *testing.T) { runCases(t, notCapableCases) }

var registryCases = []planCase{
	{
		name:    "a heartbeat-only difference is no change",
		mode:    Shared,
		desired: []provider.RecordSet{set("app.example.test", "A", 60, "192.0.2.1")},
		current: []provider.RecordSet{set("app.example.test", "A", 60, "192.0.2.1"), claimAt(hb, rec, "app.example.test", "A", 60, "192.0.2.1")},
	},
	{
		name:    "rewriting our registry record keeps its heartbeat",
		mode:    Shared,
		desired: []provider.RecordSet{set("app.example.test", "A", 60, "192.0.2.9")},
		current: []provider.RecordSet{set("app.example.test", "A", 60, "192.0.2.1"), claimAt(hb, rec, "app.example.test", "A", 60, "192.0.2.1")},
		want: []provider.Change{
			update(claimAt(hb, rec, "app.example.test", "A", 60, "192.0.2.1"), claimAt(hb, rec, "app.example.test", "A", 60, "192.0.2.9")),
			update(set("app.example.test", "A", 60, "192.0.2.1"), set("app.example.test", "A", 60, "192.0.2.9")),
		},
	},
	{
		name:    "a registry-only difference is a change but not a record change",
		desired: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1")},
		current: []provider.RecordSet{set("www.example.test", "A", 300, "192.0.2.1"), withTTL(claim(self, "www.example.test", "A", 300, "192.0.2.1"), 5)},
		want: []provider.Change{
			update(withTTL(claim(self, "www.example.test", "A", 300, "192.0.2.1"), 5), claim(self, "www.example.test", "A", 300, "192.0.2.1")),
		},
	},
	{
		name:    "glue below a new delegation: its registry record is hoisted above the cut",
		desired: []provider.RecordSet{set("child.example.test", "NS", 300, "ns1.child.example.test"), set("ns1.child.example.test", "A", 300, "192.0.2.53")},
		want: []provider.Change{
			create(claim(self, "child.example.test", "NS", 300, "ns1.child.example.test")),
			create(registry.RecordSet(zone, entryOf(self, "ns1.child.example.test", "A", 300, "192.0.2.53"), "child.example.test")),
			create(set("child.example.test", "NS", 300, "ns1.child.example.test")),
			create(set("ns1.child.example.test", "A", 300, "192.0.2.53")),
		},
	},
	{
		name:    "a cut appeared above our record: its registry record moves, heartbeat kept",
		desired: []provider.RecordSet{set("ns1.child.example.test", "A", 300, "192.0.2.53")},
		current: []provider.RecordSet{
			set("child.example.test", "NS", 300, "ns1.child.example.test"),
			set("ns1.child.example.test", "A", 300, "192.0.2.53"),
			claimAt(hb, self, "ns1.child.example.test", "A", 300, "192.0.2.53"),
		},
		want: []provider.Change{
			create(registry.RecordSet(zone, registry.WithHeartbeat(entryOf(self, "ns1.child.example.test", "A", 300, "192.0.2.53"), hb), "child.example.test")),
			del(claimAt(hb, self, "ns1.child.example.test", "A", 300, "192.0.2.53")),
		},
	},
	{
		name: "the delegation and its glue leave together",
		current: []provider.RecordSet{
			set("child.example.test", "NS", 300, "ns1.child.example.test"),
			set("ns1.child.example.test", "A", 300, "192.0.2.53"),
			claim(self, "child.example.test", "NS", 300, "ns1.child.example.test"),
			registry.RecordSet(zone, entryOf(self, "ns1.child.example.test", "A", 300, "192.0.2.53"), "child.example.test"),
		},
		want: []provider.Change{
			del(set("child.example.test", "NS", 300, "ns1.child.example.test")),
			del(set("ns1.child.example.test", "A", 300, "192.0.2.53")),
			del(claim(self, "child.example.test", "NS", 300, "ns1.child.example.test")),
			del(registry.RecordSet(zone, entryOf(self, "ns1.child.example.test", "A", 300, "192.0.2.53"), "child.example.test")),
		},
	},
	{
		name:    "removing the delegation but keeping the glue moves the glue's registry record back",
		desired: []provider.RecordSet{set("ns1.child.example.test", "A", 300, "192.0.2.53")},
		current: []provider.RecordSet{
			set("child.example.test", "NS", 300, "ns1.child.example.test"),
			set("ns1.child.example.test", "A", 300, "192.0.2.53"),
			claim(self, "child.example.test", "NS", 300, "ns1.child.example.test"),
			registry.RecordSet(zone, entryOf(self, "ns1.child.example.test", "A", 300, "192.0.2.53"), "child.example.test"),
		},
		want: []provider.Change{
			create(claim(self, "ns1.child.example.test", "A", 300, "192.0.2.53")),
			del(set("child.example.test", "NS", 300, "ns1.child.example.test")),
			del(claim(self, "child.example.test", "NS", 300, "ns1.child.example.test")),
			del(registry.RecordSet(zone, entryOf(self, "ns1.child.example.test", "A", 300, "192.0.2.53"), "child.example.test")),
		},
	},
}

func withTTL(rs provider.RecordSet, ttl int64) provider.RecordSet { rs.TTL = ttl; return rs }

func ptr[T any](v T) *T { return &v }

func allCases() []planCase {
	return slices.Concat(singleOwnerCases, foreignCases, sharedCases, cnameCases, registryCases, policyCases(), adoptCases, notCapableCases)
}

func runCases(t *testing.T, cases []planCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := Compute(tc.input())
			if got, want := render(res.Changes), render(tc.want); got != want {
				t.Errorf("Changes:\n%s\nwant:\n%s", got, want)
			}
			checkConflicts(t, res.Conflicts, tc)
			checkKept(t, res.Kept, tc.kept)
			if got, want := render(res.Skipped), render(tc.skipped); got != want {
				t.Errorf("Skipped:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func checkKept(t *testing.T, got []Conflict, want map[string]string) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range got {
		k := c.Key.String()
		seen[k] = true
		if w, ok := want[k]; !ok || !strings.Contains(c.Message, w) {
			t.Errorf("kept %s: %q, want a message containing %q", k, c.Message, w)
		}
	}
	for k := range want {
		if !seen[k] {
			t.Errorf("%s not reported as kept", k)
		}
	}
}

func TestPlan_SingleOwnerWritesOnlyItsOwnSets(t *testing.T) { runCases(t, singleOwnerCases) }

func TestPlan_NeverWritesForeignOrMalformedNames(t *testing.T) { runCases(t, foreignCases) }

func TestPlan_SharedSetsMergeContributors(t *testing.T) { runCases(t, sharedCases) }

func TestPlan_CNAMENeverCoexistsWithOtherData(t *testing.T) { runCases(t, cnameCases) }

func TestPlan_RegistryRecordsFollowTheirSets(t *testing.T) { runCases(t, registryCases) }

func checkConflicts(t *testing.T, got []Conflict, tc planCase) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range got {
		k := c.Key.String()
		seen[k] = true
		want, ok := tc.conflicts[k]
		if !ok {
			t.Errorf("unexpected conflict %s: %s", k, c.Message)
			continue
		}
		if !strings.Contains(c.Message, want) {
			t.Errorf("conflict %s: message %q does not contain %q", k, c.Message, want)
		}
		wantReason := ReasonOwnershipConflict
		if r, ok := tc.reasons[k]; ok {
			wantReason = r
		}
		if c.Reason != wantReason {
			t.Errorf("conflict %s: reason %q, want %q", k, c.Reason, wantReason)
		}
	}
	for k := range tc.conflicts {
		if !seen[k] {
			t.Errorf("missing conflict %s", k)
		}
	}
}

func render(cs []provider.Change) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "  %s %s -> %s\n", c.Action, setString(c.Before), setString(c.After))
	}
	return b.String()
}

// apply applies changes to current as a provider with conditional writes
// would: a Create of an existing key, or an Update/Delete whose Before is
// not exactly the current set, fails the test.
func apply(t *testing.T, current []provider.RecordSet, changes []provider.Change) []provider.RecordSet {
	t.Helper()
	out := slices.Clone(current)
	find := func(k provider.RecordSetKey) int {
		return slices.IndexFunc(out, func(rs provider.RecordSet) bool { return rs.Key() == k })
	}
	for _, c := range changes {
		i := find(c.Key())
		switch c.Action {
		case provider.ActionCreate:
			if i >= 0 {
				t.Fatalf("Create of existing %s", c.Key())
			}
			out = append(out, c.After.Clone())
		case provider.ActionUpdate, provider.ActionDelete:
			if i < 0 || !out[i].Equal(*c.Before) {
				t.Fatalf("%s of %s: Before does not match the current set", c.Action, c.Key())
			}
			if c.Action == provider.ActionUpdate {
				out[i] = c.After.Clone()
			} else {
				out = slices.Delete(out, i, i+1)
			}
		default:
			t.Fatalf("unknown action %q", c.Action)
		}
	}
	return out
}

func TestPlan_IsIdempotent(t *testing.T) {
	for _, tc := range allCases() {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.input()
			first := Compute(in)
			in.Current = apply(t, in.Current, first.Changes)
			second := Compute(in)
			if len(second.Changes) != 0 {
				t.Errorf("second Compute planned changes:\n%s", render(second.Changes))
			}
			if conflictKeys(first) != conflictKeys(second) {
				t.Errorf("conflicts changed: %s -> %s", conflictKeys(first), conflictKeys(second))
			}
		})
	}
}

func conflictKeys(r Result) string {
	var ks []string
	for _, c := range r.Conflicts {
		ks = append(ks, c.Key.String())
	}
	return strings.Join(ks, ",")
}

func TestPlan_IsDeterministicWhateverTheInputOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range allCases() {
		t.Run(tc.name, func(t *testing.T) {
			want := Compute(tc.input())
			for range 10 {
				in := tc.input()
				in.Current, in.Desired = slices.Clone(in.Current), slices.Clone(in.Desired)
				rng.Shuffle(len(in.Current), func(i, j int) { in.Current[i], in.Current[j] = in.Current[j], in.Current[i] })
				rng.Shuffle(len(in.Desired), func(i, j int) { in.Desired[i], in.Desired[j] = in.Desired[j], in.Desired[i] })
				got := Compute(in)
				if render(got.Changes) != render(want.Changes) || fmt.Sprint(got.Conflicts) != fmt.Sprint(want.Conflicts) {
					t.Fatalf("shuffled input gave\n%s%v\nwant\n%s%v", render(got.Changes), got.Conflicts, render(want.Changes), want.Conflicts)
				}
			}
		})
	}
}

// TestPlan_WritesOnlyWhatSelfHolds checks, over every case, the ownership
// invariants: Before is exactly a current set; no registry record of
// another contributor is written; no set is updated or deleted unless its
// registry held Self (or, shared, Self's kind), or external-dns's registry held only
// Input.ExternalDNS.AdoptOwner (a takeover: the set, or that owner's own TXT
// record); nothing is written for a
// conflicting key; Records are Changes without registry records.
func TestPlan_WritesOnlyWhatSelfHolds(t *testing.T) {
	for _, tc := range allCases() {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.input()
			res := Compute(in)
			ix := registry.NewIndex(zone, in.Current)
			conflicted := map[provider.RecordSetKey]bool{}
			for _, c := range res.Conflicts {
				conflicted[c.Key] = true
			}
			var records []provider.Change
			for _, c := range res.Changes {
				if c.Before != nil && !slices.ContainsFunc(in.Current, func(rs provider.RecordSet) bool {
					return rs.Equal(*c.Before) && slices.Equal(rs.Targets, c.Before.Targets)
				}) {
					t.Errorf("%s %s: Before is not exactly a current set", c.Action, c.Key())
				}
				if registry.IsRegistryName(c.Key().Name) {
					for _, rs := range []*provider.RecordSet{c.Before, c.After} {
						if rs == nil {
							continue
						}
						e, err := registry.Parse(rs.Targets[0])
						if err != nil || e.Contributor() != in.Self {
							t.Errorf("%s %s: writes a registry record that is not Self's: %v %v", c.Action, c.Key(), e.Contributor(), err)
						}
						if conflicted[e.Key()] {
							t.Errorf("registry record of conflicting key %s written", e.Key())
						}
					}
					continue
				}
				records = append(records, c)
				if conflicted[c.Key()] {
					t.Errorf("conflicting key %s written", c.Key())
				}
				if c.Before == nil {
					continue
				}
				held := adopted(in, ix, c)
				for _, e := range ix.Entries(c.Key()) {
					held = held || e.Contributor() == in.Self || (in.Mode == Shared && e.Contributor().Kind() == in.Self.Kind())
				}
				if !held {
					t.Errorf("%s of %s, which Self does not hold", c.Action, c.Key())
				}
			}
			if render(records) != render(res.Records) {
				t.Errorf("Records:\n%s\nwant Changes without registry records:\n%s", render(res.Records), render(records))
			}
		})
	}
}

func TestPlan_BeforeIsACopy(t *testing.T) {
	cur := set("www.example.test", "A", 300, "192.0.2.1")
	in := Input{Zone: zone, Self: self, Current: []provider.RecordSet{cur, claim(self, "www.example.test", "A", 300, "192.0.2.1")}}
	res := Compute(in)
	if len(res.Changes) == 0 {
		t.Fatal("no changes")
	}
	res.Changes[0].Before.Targets[0] = "mutated"
	if in.Current[0].Targets[0] != "192.0.2.1" {
		t.Error("Compute returned Before sharing memory with Current")
	}
}

func TestMode_String(t *testing.T) {
	if SingleOwner.String() != "SingleOwner" || Shared.String() != "Shared" || Mode(7).String() != "Mode(7)" {
		t.Error("Mode.String")
	}
}

func TestPlan_SharedSnapshotGivesTheSameResult(t *testing.T) {
	for _, tc := range allCases() {
		in := tc.input()
		want := Compute(in)
		in.Snapshot = NewSnapshot(in.Zone, in.Current)
		got := Compute(in)
		if render(got.Changes) != render(want.Changes) || fmt.Sprint(got.Conflicts) != fmt.Sprint(want.Conflicts) {
			t.Errorf("%s: a shared snapshot changed the result", tc.name)
		}
	}
}

// BenchmarkCompute_OneObjectInABigZone is one DNSEndpoint of 10 endpoints
// planned against a zone of 10,000 managed sets and their registry records.
func BenchmarkCompute_OneObjectInABigZone(b *testing.B) {
	var current, desired []provider.RecordSet
	for i := range 10_000 {
		name := fmt.Sprintf("h%d.example.test", i)
		owner := registry.Contributor{OwnerID: "c1", Resource: fmt.Sprintf("DNSEndpoint/ns/o%d", i/10)}
		ip := fmt.Sprintf("10.%d.%d.1", i/256, i%256)
		current = append(current, set(name, "A", 300, ip), claim(owner, name, "A", 300, ip))
		if i < 10 {
			desired = append(desired, set(name, "A", 300, ip))
		}
	}
	in := Input{Zone: zone, Self: registry.Contributor{OwnerID: "c1", Resource: "DNSEndpoint/ns/o0"}, Desired: desired, Current: current}
	b.Run("snapshot per call", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if r := Compute(in); len(r.Changes) != 0 || len(r.Conflicts) != 0 {
				b.Fatalf("unexpected result %+v", r)
			}
		}
	})
	in.Snapshot = NewSnapshot(zone, current)
	b.Run("shared snapshot", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Compute(in)
		}
	})
	// A 1% change as the bench makes it: the object's 10 endpoints get a new target, planned
	// against the shared snapshot (10 updates of the sets and 10 of their registry records).
	changed := make([]provider.RecordSet, len(desired))
	for i, rs := range desired {
		changed[i] = set(rs.Name, "A", 300, "192.0.2.99")
	}
	in.Desired = changed
	b.Run("changed object, shared snapshot", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if r := Compute(in); len(r.Changes) == 0 || len(r.Conflicts) != 0 {
				b.Fatalf("unexpected result: %d changes, conflicts %v", len(r.Changes), r.Conflicts)
			}
		}
	})
	b.Run("new snapshot", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if NewSnapshot(zone, current) == nil {
				b.Fatal("nil snapshot")
			}
		}
	})
}

// TestPlan_SharedMarksSharedRecordSetChanges: a Shared-mode plan marks each record-set change
// provider.Change.Shared (a provider without conditional writes read-merge-writes it); its
// registry records, and every change of a SingleOwner plan, have one writer and are not.
func TestPlan_SharedMarksSharedRecordSetChanges(t *testing.T) {
	for _, tc := range []struct {
		mode Mode
		self registry.Contributor
	}{{SingleOwner, self}, {Shared, rec}} {
		current := []provider.RecordSet{apexSOA, apexNS,
			set("old.example.test", "A", 60, "192.0.2.1"), claim(tc.self, "old.example.test", "A", 60, "192.0.2.1"),
			set("upd.example.test", "A", 60, "192.0.2.1"), claim(tc.self, "upd.example.test", "A", 60, "192.0.2.1")}
		res := Compute(Input{Zone: zone, Self: tc.self, Mode: tc.mode, Current: current, Desired: []provider.RecordSet{
			set("new.example.test", "A", 60, "192.0.2.2"), set("upd.example.test", "A", 60, "192.0.2.3")}})
		var records, regs int
		for _, ch := range res.Changes {
			isReg := registry.IsRegistryName(ch.Key().Name)
			if isReg {
				regs++
			} else {
				records++
			}
			if want := tc.mode == Shared && !isReg; ch.Shared != want {
				t.Errorf("%s: %s %s: Shared = %v, want %v", tc.mode, ch.Action, ch.Key(), ch.Shared, want)
			}
		}
		if records != 3 || regs != 3 {
			t.Fatalf("%s: %d record and %d registry changes, want 3 and 3:\n%s", tc.mode, records, regs, render(res.Changes))
		}
	}
}
