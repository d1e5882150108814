package registry

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// asValues is q as url.Values, for comparison with url.ParseQuery.
func asValues(q query) url.Values {
	m := url.Values{}
	for _, f := range q {
		m[f.k] = append(m[f.k], f.v)
	}
	return m
}

// sameAsURLParseQuery fails t unless parseQuery reads s as url.ParseQuery does: the same
// fields and values in order, and an error exactly when it errs, with the same text.
func sameAsURLParseQuery(t *testing.T, s string) {
	t.Helper()
	q, err := parseQuery(s)
	m, merr := url.ParseQuery(s)
	if (err == nil) != (merr == nil) || err != nil && err.Error() != merr.Error() {
		t.Fatalf("parseQuery(%q) error %v, url.ParseQuery %v", s, err, merr)
	}
	if got := asValues(q); !reflect.DeepEqual(got, m) {
		t.Fatalf("parseQuery(%q) = %v, url.ParseQuery %v", s, got, m)
	}
}

// TestParseQuery_ReadsAsURLParseQuery: Parse's map-free reader of registry values keeps
// url.ParseQuery's reading, errors included.
func TestParseQuery_ReadsAsURLParseQuery(t *testing.T) {
	for _, s := range []string{
		"", "&", "a", "a=", "=b", "a=1&a=2&b=3", "heritage=dnsplane&v=1&owner=c1&target=10.0.0.1&target=10.0.0.2",
		"a=%zz&b=1", "a=1;b=2&c=3", "a=x+y&b=%41", "a%3D=1", "&&a=1&&", "a=1&b=%zz&c=;",
		strings.Repeat("a=1&", maxQueryFields+5), strings.Repeat("&", 20000),
	} {
		sameAsURLParseQuery(t, s)
	}
}

func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"a=1&a=2", "heritage=dnsplane&v=1", "a=%zz;b", "x+y=%20"} {
		f.Add(s)
	}
	f.Fuzz(sameAsURLParseQuery)
}

// TestNameMatches_AcceptsEveryNameNameGives: nameMatches, which compares the plain form piece
// by piece instead of building it, accepts every name Name gives for an entry (plain, apex,
// wildcard, a hashed first label, a name hoisted for its length or below a cut) and no name
// Name gives for another entry.
func TestNameMatches_AcceptsEveryNameNameGives(t *testing.T) {
	const zone = "example.test"
	long := strings.Repeat("a", 60)
	names := []string{zone, "www." + zone, "*." + zone, "-x." + zone, long + "." + zone,
		strings.Repeat(long+".", 3) + zone, "deep.child." + zone, "a.b.c." + zone}
	for _, n := range names {
		for _, cuts := range [][]string{nil, {"child." + zone}} {
			e := Entry{OwnerID: "c1", Resource: "DNSEndpoint/ns/app", Name: n, Type: "A", TTL: 60}
			if reg := Name(zone, e.Contributor(), e.Key(), cuts...); !nameMatches(zone, reg, e) {
				t.Errorf("nameMatches(%q) for %s with cuts %v = false, want true", reg, n, cuts)
			}
			for _, other := range names {
				o := e
				o.Name = other
				if reg := Name(zone, o.Contributor(), o.Key(), cuts...); other != n && nameMatches(zone, reg, e) {
					t.Errorf("nameMatches(%q) for %s = true, but it is the name of %s", reg, n, other)
				}
			}
			o := e
			o.Type = "AAAA"
			if reg := Name(zone, o.Contributor(), o.Key(), cuts...); nameMatches(zone, reg, e) {
				t.Errorf("nameMatches(%q) for %s A = true, but it is the AAAA name", reg, n)
			}
		}
	}
}
