package dynupdate

import (
	"strings"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/miekg/dns"
)

// Policy is what one binding (a DNSZone's spec.dynamicUpdates item) lets its key change.
type Policy struct {
	// Names are patterns relative to the zone (dnsv1.DynamicUpdate.Names): "@" is the apex; a
	// "*" label matches one label, a last "*" any number of labels, none included.
	Names []string
	// Types are the record types, as miekg/dns numbers them.
	Types []uint16
}

// Allows reports whether the policy lets its key change the RRset of type typ at name (an
// FQDN, any case) in zone (an FQDN). dns.TypeANY (a deletion of every RRset at the name) is
// allowed where the name is: it only reaches the key's own records, of allowed types.
func (p Policy) Allows(zone, name string, typ uint16) bool {
	if typ != dns.TypeANY && !containsType(p.Types, typ) {
		return false
	}
	rel, ok := relative(zone, name)
	if !ok {
		return false
	}
	for _, pat := range p.Names {
		if MatchName(pat, rel) {
			return true
		}
	}
	return false
}

func containsType(types []uint16, t uint16) bool {
	for _, x := range types {
		if x == t {
			return true
		}
	}
	return false
}

// relative returns name's labels below zone, in order, lower-case ([] at the apex), and true;
// false when name is not zone or below it.
func relative(zone, name string) ([]string, bool) {
	zone, name = dnswire.Fqdn(zone), dnswire.Fqdn(name)
	if !dns.IsSubDomain(zone, name) {
		return nil, false
	}
	if name == zone {
		return []string{}, true
	}
	rest := strings.TrimSuffix(name, zone)
	if zone == "." {
		rest = name
	}
	return dns.SplitDomainName(strings.TrimSuffix(rest, ".")), true
}

// MatchName reports whether the relative name of labels rel (lower-case, the apex = none)
// matches pattern: "@" matches the apex alone; otherwise labels compare without case, a "*"
// label matches exactly one label, and a last "*" any number of labels, none included.
func MatchName(pattern string, rel []string) bool {
	if pattern == "@" {
		return len(rel) == 0
	}
	pat := strings.Split(strings.ToLower(pattern), ".")
	for i, p := range pat {
		last := i == len(pat)-1
		switch {
		case last && p == "*":
			return len(rel) >= i
		case i >= len(rel):
			return false
		case p != "*" && p != rel[i]:
			return false
		}
	}
	return len(rel) == len(pat)
}
