package main

import (
	"strings"
	"testing"

	"github.com/dnsplane/dnsplane/pkg/registry"
	"github.com/dnsplane/dnsplane/pkg/zonedb/zonedbtest"
)

// regLine is the registry TXT record of owner for name (an FQDN) → target, at its registry name
// (or at the FQDN "at" when not empty).
func regLine(owner, zone, name, target, at string) string {
	e := registry.Entry{OwnerID: owner, Resource: registry.Resource("dnsendpoint", "default", "app0"),
		Name: strings.TrimSuffix(name, "."), Type: "A", TTL: 300, Targets: []string{target}}
	rs := registry.RecordSet(strings.TrimSuffix(zone, "."), e)
	rs.Name += "."
	if at != "" {
		rs.Name = at
	}
	return rs.Name + " 300 IN TXT \"" + strings.ReplaceAll(rs.Targets[0], `"`, `\"`) + "\""
}

func TestAuditZone(t *testing.T) {
	const zone = "z0.bench.test."
	wanted := map[string]string{"h0.z0.bench.test.": "10.0.0.1", "h1.z0.bench.test.": "10.0.1.1"}
	foreignLines := []string{"foreign0.z0.bench.test. 120 IN A 192.0.2.10", "ext0.z0.bench.test. 120 IN A 192.0.2.30",
		`a-ext0.z0.bench.test. 120 IN TXT "heritage=external-dns,external-dns/owner=x"`}
	foreign := rrsetTexts(zonedbtest.RRs(t, foreignLines...), isForeignName)
	good := []string{"h0.z0.bench.test. 300 IN A 10.0.0.1", regLine(benchOwner, zone, "h0.z0.bench.test.", "10.0.0.1", ""),
		"h1.z0.bench.test. 300 IN A 10.0.1.1", regLine(benchOwner, zone, "h1.z0.bench.test.", "10.0.1.1", "")}
	apex := []string{"z0.bench.test. 3600 IN SOA ns1.z0.bench.test. h.z0.bench.test. 1 10800 3600 604800 3600", "z0.bench.test. 3600 IN NS ns1.z0.bench.test."}
	lines := func(extra ...[]string) []string {
		var out []string
		for _, e := range extra {
			out = append(out, e...)
		}
		return out
	}
	tests := []struct {
		name  string
		lines []string
		want  audit
	}{
		{"exact", lines(apex, foreignLines, good), audit{Present: 2}},
		{"a record missing", lines(apex, foreignLines, good[:2], good[3:]), audit{Present: 1}},
		{"registry entry missing", lines(apex, foreignLines, good[:3]), audit{Present: 1}},
		{"wrong target", lines(apex, foreignLines, good[:2], []string{"h1.z0.bench.test. 300 IN A 10.9.9.9", good[3]}), audit{Present: 1}},
		{"two targets", lines(apex, foreignLines, good, []string{"h1.z0.bench.test. 300 IN A 10.9.9.9"}), audit{Present: 1, Duplicated: 1}},
		{"a registry entry at another name", lines(apex, foreignLines, good, []string{regLine(benchOwner, zone, "h1.z0.bench.test.", "10.0.1.1", "dp-x.z0.bench.test.")}), audit{Present: 2, Orphaned: 1}},
		{"two registry entries at one name", lines(apex, foreignLines, good, []string{strings.Replace(good[3], "ttl=300", "ttl=60", 1)}), audit{Present: 1, Duplicated: 1}},
		{"orphaned workload name", lines(apex, foreignLines, good, []string{"h7.z0.bench.test. 300 IN A 10.0.7.1"}), audit{Present: 2, Orphaned: 1}},
		{"orphaned registry entry", lines(apex, foreignLines, good, []string{regLine(benchOwner, zone, "h7.z0.bench.test.", "10.0.7.1", "")}), audit{Present: 2, Orphaned: 1}},
		{"stale registry target", lines(apex, foreignLines, good, []string{regLine(benchOwner, zone, "h1.z0.bench.test.", "10.9.9.9", "")}), audit{Present: 2, Orphaned: 1}},
		{"foreign changed", lines(apex, []string{"foreign0.z0.bench.test. 60 IN A 192.0.2.10"}, foreignLines[1:], good), audit{Present: 2, ForeignTouched: 1}},
		{"foreign deleted", lines(apex, foreignLines[:2], good), audit{Present: 2, ForeignTouched: 1}},
		{"foreign added", lines(apex, foreignLines, good, []string{"foreign9.z0.bench.test. 120 IN A 192.0.2.99"}), audit{Present: 2, ForeignTouched: 1}},
		{"other owner's registry kept", lines(apex, foreignLines, good, []string{regLine("other-cluster", zone, "other0.z0.bench.test.", "192.0.2.20", "")}), audit{Present: 2, ForeignTouched: 1}},
		{"unrelated names ignored", lines(apex, foreignLines, good, []string{"ns1.z0.bench.test. 300 IN A 127.0.0.1", "hx.z0.bench.test. 300 IN A 10.1.1.1"}), audit{Present: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := auditZone(zone, zonedbtest.RRs(t, tc.lines...), wanted, foreign)
			if got != tc.want {
				t.Fatalf("auditZone = %+v, want %+v", got, tc.want)
			}
			if exact := (audit{Wanted: 2, Present: got.Present, Duplicated: got.Duplicated, Orphaned: got.Orphaned, ForeignTouched: got.ForeignTouched}).exact(); exact != (tc.name == "exact" || tc.name == "unrelated names ignored") {
				t.Errorf("exact = %v", exact)
			}
		})
	}
}
