package publish

import (
	"cmp"
	"slices"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/served"
)

// ServedKeys are the keys that sign a signed DNSZone's SOA, for the Served check
// (served.Zone.Keys): the Active ZSKs and CSKs of status.dnssec.keys, sorted by tag and
// algorithm. None for a zone that is not signed (no status.dnssec: DNSSEC off, not supported by
// its provider, or its keys invalid): its serials alone are asked. The DNSZone's own check and
// the objects' use it alike, so that the Tracker sees one key set per zone.
func ServedKeys(z *dnsv1.DNSZone) []served.Key {
	if z == nil || z.Status.DNSSEC == nil {
		return nil
	}
	var keys []served.Key
	for _, k := range z.Status.DNSSEC.Keys {
		key := dnssec.Key{Role: dnssec.Role(k.Role), State: dnssec.State(k.State)}
		if key.SignsZone() {
			keys = append(keys, served.Key{Tag: uint16(k.Tag), Algorithm: k.Algorithm})
		}
	}
	slices.SortFunc(keys, func(a, b served.Key) int {
		return cmp.Or(cmp.Compare(a.Tag, b.Tag), cmp.Compare(a.Algorithm, b.Algorithm))
	})
	return keys
}
